package ippool

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/httpauth"
)

// An access is what the caller of one API call may do with the pools:
// verbs on a pool's allocations (SubjectAccessReview), for its own node's
// hosts only unless it may VerbAnyHost, for its own node's Pods only.
// The zero access is --netservice-insecure's: everything.
type access struct {
	caller *httpauth.Caller
	auth   *httpauth.Authenticator
}

func attributes(verb, pool string) httpauth.Attributes {
	return httpauth.Attributes{Verb: verb, Group: v1alpha1.AllocationsGroup, Resource: v1alpha1.AllocationsResource,
		Subresource: v1alpha1.AllocationsSubresource, Name: pool}
}

// may is nil when the caller may do verb on pool's allocations for host,
// else a 403 Error that says what it lacks.
func (c *access) may(ctx context.Context, verb, pool, host string) error {
	if c.caller == nil {
		return nil
	}
	if err := c.check(ctx, verb, pool); err != nil {
		return err
	}
	node := c.caller.Node()
	var ips []string
	if node != "" {
		var err error
		if ips, err = c.auth.NodeIPs(ctx, node); err != nil {
			return unavailable(err)
		}
		if slices.Contains(ips, host) {
			return nil
		}
	}
	if err := c.check(ctx, v1alpha1.VerbAnyHost, pool); err != nil {
		if node == "" {
			return errorf(CodeForbidden, 403, "user %q is not a node: it may act for host %s only with verb %s on %s/%s of NetPool %s (%s)",
				c.caller.Name, host, v1alpha1.VerbAnyHost, v1alpha1.AllocationsResource, v1alpha1.AllocationsSubresource, pool, err)
		}
		return errorf(CodeForbidden, 403, "user %q speaks for node %s (InternalIPs: %s), not for host %s: a node acts only for its own IPs (%s)",
			c.caller.Name, node, orNone(ips), host, err)
	}
	return nil
}

// check is nil when the caller may do verb on pool's allocations.
func (c *access) check(ctx context.Context, verb, pool string) error {
	at := attributes(verb, pool)
	ok, reason, err := c.auth.Authorize(ctx, c.caller, at)
	if err != nil {
		return unavailable(err)
	}
	if ok {
		return nil
	}
	msg := fmt.Sprintf("user %q may not %s %s/%s of NetPool %s", c.caller.Name, verb, at.Resource, at.Subresource, pool)
	if reason != "" {
		msg += ": " + reason
	}
	return errorf(CodeForbidden, 403, "%s", msg)
}

// permitted are the pools the caller may do verb on for host; none is the
// first refusal.
func (c *access) permitted(ctx context.Context, verb, host string, pools []v1alpha1.NetPool) ([]v1alpha1.NetPool, error) {
	var out []v1alpha1.NetPool
	var refused error
	for _, p := range pools {
		switch err := c.may(ctx, verb, p.Name, host); {
		case err == nil:
			out = append(out, p)
		case isCode(err, CodeForbidden):
			if refused == nil {
				refused = err
			}
		default:
			return nil, err
		}
	}
	if len(out) == 0 && refused != nil {
		return nil, refused
	}
	return out, nil
}

// ownPod is nil unless the caller speaks for a node and pod is not on it:
// a node takes a Pod's (fixed) IP only for its own Pods.
func (c *access) ownPod(pod *corev1.Pod) error {
	if c.caller == nil {
		return nil
	}
	node := c.caller.Node()
	if node == "" || pod.Spec.NodeName == node {
		return nil
	}
	return errorf(CodeForbidden, 403, "pod %s/%s is on node %q and user %q speaks for node %s: a node acts only for its own Pods",
		pod.Namespace, pod.Name, pod.Spec.NodeName, c.caller.Name, node)
}

// refused is the refusal of a pool permitted left out; nil means the
// grant changed since, and the call is worth retrying.
func refused(err error) error {
	if err == nil {
		return errorf(CodeUnavailable, 503, "the caller's access changed during the call; retry")
	}
	return err
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
