package portpool

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

// Tags of the load balancers a pool creates, beside the owner tags every
// created object carries (mr.OwnerTags). The UID tag finds them after a
// restart (and a create whose answer was lost); the pool tag tells people
// which pool owns them.
const (
	TagPoolUID = mr.TagPoolUID
	TagPool    = mr.TagPool
)

// Listener and load balancer name limits.
const (
	maxListenerName = 80
	maxLBName       = 60
	hashLen         = 8
	maxClientToken  = 64
)

// namer gives the pool's listeners their names: "<namespace>_<name>-<port>".
// Kubernetes names never hold "_", so the prefix is unique per pool, and a
// listener belongs to the pool exactly when it carries the name the pool
// gives its port.
type namer struct{ prefix string }

func newNamer(namespace, name string) namer {
	p := namespace + "_" + name
	// Room for "-65535".
	if room := maxListenerName - 6; len(p) > room {
		p = p[:room-hashLen-1] + "-" + shortHash(namespace+"/"+name)
	}
	return namer{prefix: p}
}

func (n namer) listenerName(port int64) string { return n.prefix + "-" + strconv.FormatInt(port, 10) }

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:hashLen]
}

// createRequest creates the listeners of one protocol on ports; for a
// segmented pool ports holds one start port and EndPort closes the range.
func createRequest(s shape, lbID, protocol string, ports []int64, owner namer, settings *v1alpha1.PoolListenerSettings) *clbsdk.CreateListenerRequest {
	names := make([]string, len(ports))
	for i, p := range ports {
		names[i] = owner.listenerName(p)
	}
	var end int64
	if s.seg > 1 && len(ports) == 1 {
		end = ports[0] + s.seg - 1
	}
	return clb.CreatePoolListenersRequest(lbID, protocol, ports, names, end, settings)
}

// lbCreateRequest is the CreateLoadBalancer request of the pool's next
// load balancer. Its ClientToken is derived from the pool's UID, the index
// of the new load balancer and the load balancers the pool already has, so
// a retry after a lost answer (nothing new found yet) returns the same
// load balancer, while a load balancer deleted behind the pool's back is
// replaced by a new one rather than answered with the dead id again.
func lbCreateRequest(cr *v1alpha1.PortPool, index int, existing []string) *clbsdk.CreateLoadBalancerRequest {
	tmpl := cr.Spec.ForProvider.AutoCreate.Template
	lb := &v1alpha1.LoadBalancer{}
	lb.SetNamespace(cr.GetNamespace())
	lb.SetName(lbName(cr.GetName(), index))
	lb.SetUID(cr.GetUID())
	lb.Spec.ForProvider = *tmpl.DeepCopy()
	uid := string(cr.GetUID())
	req := clb.CreateLoadBalancerRequest(lb, poolTags(cr, tmpl.Tags))
	req.ClientToken = clb.Ptr(clientToken(uid, index, existing))
	return req
}

// poolTags are the template's tags plus the pool's owner tags: its
// namespace and kind (mr.OwnerTags), with TagPool for the name and
// TagPoolUID for the UID, so that 16 tags of the template still fit in the
// cloud's 20. The pool's win over the template's.
func poolTags(cr *v1alpha1.PortPool, user map[string]string) map[string]string {
	tags := mr.OwnerTags(v1alpha1.PortPoolKind, cr, user)
	delete(tags, mr.TagUID)
	delete(tags, mr.TagName)
	tags[TagPool] = networkv1alpha1.PoolKey(cr.GetNamespace(), cr.GetName())
	tags[TagPoolUID] = string(cr.GetUID())
	return tags
}

// clientToken is "pp-<uid>-<index>-<hash of the existing ids>", at most
// 64 characters.
func clientToken(uid string, index int, existing []string) string {
	ids := strings.Join(slices.Sorted(slices.Values(existing)), ",")
	t := fmt.Sprintf("pp-%s-%d-%s", uid, index, shortHash(ids))
	if len(t) > maxClientToken {
		t = fmt.Sprintf("pp-%s-%d-%s", shortHash(uid), index, shortHash(ids))
	}
	return t
}

// lbName is the cloud name of the pool's index-th load balancer.
func lbName(pool string, index int) string {
	suffix := "-" + strconv.Itoa(index)
	if len(pool)+len(suffix) > maxLBName {
		pool = pool[:maxLBName-len(suffix)]
	}
	return pool + suffix
}
