// Package httpauth says who calls an HTTP API the provider serves itself
// and what Kubernetes RBAC lets them do, the way the API server's own
// webhook authentication and authorization do: a client certificate
// verified against a CA (CN the user, O the groups), else a bearer token
// the API server reviews (TokenReview); then a SubjectAccessReview per
// verb and object. Only positive answers are cached, and only for TTL, so
// a revoked grant or token stops working within it.
package httpauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TTL is how long a positive TokenReview, SubjectAccessReview or Node
// read is reused.
const TTL = 10 * time.Second

// The identity Kubernetes gives nodes, and the extra a ServiceAccount
// token bound to a Pod carries with the Pod's node (Kubernetes 1.30 on).
const (
	NodeUserPrefix = "system:node:"
	NodesGroup     = "system:nodes"
	ExtraNodeName  = "authentication.kubernetes.io/node-name"
)

// A Caller is an authenticated user.
type Caller struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Node is the node the caller speaks for, or "": a node's own identity
// (system:node:<name> in group system:nodes, as NodeRestriction knows
// it), or a ServiceAccount token bound to a Pod on that node (a CNI
// DaemonSet's projected token).
func (c *Caller) Node() string {
	if name, ok := strings.CutPrefix(c.Name, NodeUserPrefix); ok && name != "" && slices.Contains(c.Groups, NodesGroup) {
		return name
	}
	if v := c.Extra[ExtraNodeName]; len(v) == 1 {
		return v[0]
	}
	return ""
}

// ErrUnauthenticated wraps every answer that the caller is nobody.
var ErrUnauthenticated = errors.New("unauthenticated")

// Attributes are what a SubjectAccessReview asks about.
type Attributes struct {
	Verb, Group, Resource, Subresource, Namespace, Name string
}

func (a Attributes) String() string {
	s := a.Resource
	if a.Subresource != "" {
		s += "/" + a.Subresource
	}
	if a.Group != "" {
		s += "." + a.Group
	}
	return fmt.Sprintf("%s %s %q", a.Verb, s, a.Name)
}

// An Authenticator asks the API server: kube creates TokenReviews and
// SubjectAccessReviews, api reads Nodes by name (uncached: get is all it
// needs).
type Authenticator struct {
	kube client.Client
	api  client.Reader
	now  func() time.Time

	tokens    cache[Caller]
	decisions cache[bool]
	nodes     cache[[]string]
}

// New returns an Authenticator that asks through kube and api.
func New(kube client.Client, api client.Reader) *Authenticator {
	return &Authenticator{kube: kube, api: api, now: time.Now}
}

// Authenticate says who made r: a verified client certificate first,
// else a bearer token. An error wrapping ErrUnauthenticated says why r
// proves no one; any other is the API server's failure.
func (a *Authenticator) Authenticate(ctx context.Context, r *http.Request) (*Caller, error) {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		cert := r.TLS.VerifiedChains[0][0]
		if cert.Subject.CommonName == "" {
			return nil, fmt.Errorf("%w: the client certificate has no common name", ErrUnauthenticated)
		}
		return &Caller{Name: cert.Subject.CommonName, Groups: slices.Clone(cert.Subject.Organization)}, nil
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if token = strings.TrimSpace(token); !ok || token == "" {
		return nil, fmt.Errorf("%w: no credentials; present a bearer token or a client certificate", ErrUnauthenticated)
	}
	key := fmt.Sprintf("%x", sha256.Sum256([]byte(token)))
	if c, ok := a.tokens.get(key, a.now()); ok {
		return &c, nil
	}
	tr := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	if err := a.kube.Create(ctx, tr); err != nil {
		return nil, fmt.Errorf("cannot review the token: %w", err)
	}
	if !tr.Status.Authenticated {
		why := tr.Status.Error
		if why == "" {
			why = "not authenticated"
		}
		return nil, fmt.Errorf("%w: the API server refuses the token: %s", ErrUnauthenticated, why)
	}
	u := tr.Status.User
	c := Caller{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: map[string][]string{}}
	for k, v := range u.Extra {
		c.Extra[k] = v
	}
	a.tokens.put(key, c, a.now())
	return &c, nil
}

// Authorize asks whether c may do at; when not, reason is the
// authorizer's, possibly empty.
func (a *Authenticator) Authorize(ctx context.Context, c *Caller, at Attributes) (allowed bool, reason string, err error) {
	key := fmt.Sprintf("%q %q %q %v %v", c.Name, c.UID, c.Groups, c.Extra, at)
	if _, ok := a.decisions.get(key, a.now()); ok {
		return true, "", nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range c.Extra {
		extra[k] = v
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: c.Name, UID: c.UID, Groups: c.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: at.Verb, Group: at.Group, Resource: at.Resource, Subresource: at.Subresource, Namespace: at.Namespace, Name: at.Name,
		},
	}}
	if err := a.kube.Create(ctx, sar); err != nil {
		return false, "", fmt.Errorf("cannot review access: %w", err)
	}
	if sar.Status.Allowed {
		a.decisions.put(key, true, a.now())
	}
	return sar.Status.Allowed, sar.Status.Reason, nil
}

// NodeIPs are the InternalIPs of a Node: the hosts a node identity may
// speak for. A Node that does not exist has none.
func (a *Authenticator) NodeIPs(ctx context.Context, node string) ([]string, error) {
	if ips, ok := a.nodes.get(node, a.now()); ok {
		return ips, nil
	}
	n := &corev1.Node{}
	if err := a.api.Get(ctx, types.NamespacedName{Name: node}, n); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	var ips []string
	for _, ad := range n.Status.Addresses {
		if ad.Type == corev1.NodeInternalIP {
			ips = append(ips, ad.Address)
		}
	}
	a.nodes.put(node, ips, a.now())
	return ips, nil
}

// cache keeps values for TTL. It is bounded: when full, it drops what
// expired, and everything if nothing did.
type cache[V any] struct {
	mu sync.Mutex
	m  map[string]entry[V]
}

type entry[V any] struct {
	v       V
	expires time.Time
}

const maxEntries = 4096

func (c *cache[V]) get(k string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (c *cache[V]) put(k string, v V, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]entry[V]{}
	}
	if len(c.m) >= maxEntries {
		for k, e := range c.m {
			if !now.Before(e.expires) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxEntries {
			clear(c.m)
		}
	}
	c.m[k] = entry[V]{v: v, expires: now.Add(TTL)}
}
