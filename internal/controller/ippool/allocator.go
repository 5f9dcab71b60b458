package ippool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// Response codes of the allocator API (the envelope's code). The seed
// documents only 0; these are ours, one per cause, stable for scripts.
const (
	CodeOK               = 0
	CodeMalformed        = 4000 // body not JSON, a required field missing or not an IP
	CodeUnknownHost      = 4040 // no NetPool lists the host
	CodeIPNotInPool      = 4041 // the asked IP is in no pool of the host
	CodeClaimNotFound    = 4042 // the Pod names a NetIPClaim that does not exist
	CodeNotFound         = 4043 // no such path
	CodeMethodNotAllowed = 4050
	CodeIPTaken          = 4090 // the asked IP is held by another container
	CodeNoIPLeft         = 4091 // every IP of the host's pools is held
	CodeUnavailable      = 5030 // the API server failed, or the pools are not served yet; retry
)

// An Error is an answer other than success.
type Error struct {
	Code    int
	Status  int // HTTP status
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(code, status int, format string, a ...any) *Error {
	return &Error{Code: code, Status: status, Message: fmt.Sprintf(format, a...)}
}

// A Request is the seed's allocate and release body.
type Request struct {
	Host         string `json:"host"`
	ContainerID  string `json:"containerID"`
	IPAddr       string `json:"ipAddr,omitempty"`
	PodName      string `json:"podName"`
	PodNamespace string `json:"podNamespace"`
}

// A Lease is one IP given to a container: an element of the envelope's
// data.
type Lease struct {
	IPAddr      string `json:"ipAddr"`
	Mask        int    `json:"mask"`
	Gateway     string `json:"gateway"`
	Pool        string `json:"pool"`
	Host        string `json:"host"`
	ContainerID string `json:"containerID,omitempty"`
	Fixed       bool   `json:"fixed"`
	Status      string `json:"status"`
}

func leaseOf(ip *v1alpha1.NetIP) Lease {
	return Lease{IPAddr: ip.Name, Mask: ip.Spec.Mask, Gateway: ip.Spec.Gateway, Pool: ip.Spec.Pool, Host: ip.Status.Host,
		ContainerID: ip.Status.ContainerID, Fixed: ip.Status.Fixed, Status: ip.Status.Status}
}

// An Allocator hands NetIPs to containers. Reads come from the manager's
// cache; every write carries the resourceVersion read, so a stale read
// only costs a retry. After a write it waits until the cache has seen it,
// so that the next call of the same container (a retry, a release) finds
// what this one did.
type Allocator struct {
	kube  client.Client
	api   client.Reader
	log   logging.Logger
	clock func() time.Time
	keep  time.Duration

	// inflight holds the IPs this process is writing, so that concurrent
	// calls here try different ones. Only an optimisation: the version
	// check is what keeps an IP from being given twice.
	inflight sync.Map
}

// attempts bounds the writes one call tries before it answers
// CodeUnavailable; each lost race is another host's success.
const attempts = 64

// fixedFor is what a Pod's IP is kept for.
type fixedFor struct {
	key      string // v1alpha1.FixedKey
	claim    *v1alpha1.NetIPClaim
	keep     string // "" keeps it until the claim goes
	wantName string // the claim's netIPName
}

// Allocate gives req's container an IP of a pool of its host: the one it
// already holds, its Pod's fixed IP, the one it asks for, or any free one.
func (a *Allocator) Allocate(ctx context.Context, req Request) (*Lease, error) {
	if err := validate(req); err != nil {
		return nil, err
	}
	if req.IPAddr != "" {
		if _, err := netip.ParseAddr(req.IPAddr); err != nil {
			return nil, errorf(CodeMalformed, 400, "ipAddr %q is not an IP address", req.IPAddr)
		}
	}
	pools, err := a.poolsOf(ctx, req.Host)
	if err != nil {
		return nil, err
	}
	if len(pools) == 0 {
		return nil, errorf(CodeUnknownHost, 404, "host %s is in no NetPool", req.Host)
	}
	if held, err := a.heldBy(ctx, req.Host, req.ContainerID); err != nil || held != nil {
		return lease(held, err)
	}
	fixed, err := a.fixedOf(ctx, req)
	if err != nil {
		return nil, err
	}
	want := req.IPAddr
	if fixed != nil {
		ips := &v1alpha1.NetIPList{}
		if err := a.kube.List(ctx, ips, client.MatchingFields{v1alpha1.NetIPFixedIndex: fixed.key}); err != nil {
			return nil, unavailable(err)
		}
		// A Reserved IP taken out of its pool is about to be deleted by
		// the pool controller: the Pod gets another.
		ips.Items = slices.DeleteFunc(ips.Items, func(ip v1alpha1.NetIP) bool {
			return ip.Status.Status == v1alpha1.NetIPReserved && !listedInPool(pools, &ip)
		})
		if len(ips.Items) > 0 {
			// The Pod's IP, Reserved since its last container, or Active
			// for a container the runtime replaced without a release.
			ip := &ips.Items[0]
			if !slices.ContainsFunc(pools, func(p v1alpha1.NetPool) bool { return p.Name == ip.Spec.Pool }) {
				return nil, errorf(CodeIPNotInPool, 404, "the fixed IP %s of %s is in NetPool %s, which does not list host %s", ip.Name, fixed.key, ip.Spec.Pool, req.Host)
			}
			return a.takeNamed(ctx, ip.Name, req, fixed, true)
		}
		if want == "" {
			want = fixed.wantName
		}
	}
	if want != "" {
		ip := &v1alpha1.NetIP{}
		if err := a.kube.Get(ctx, types.NamespacedName{Name: want}, ip); kerrors.IsNotFound(err) || err == nil && !listedIn(pools, ip) {
			return nil, errorf(CodeIPNotInPool, 404, "IP %s is in no NetPool of host %s", want, req.Host)
		} else if err != nil {
			return nil, unavailable(err)
		}
		return a.takeNamed(ctx, want, req, fixed, false)
	}
	return a.takeAny(ctx, pools, req, fixed)
}

// takeNamed takes one IP; own says it is already the Pod's.
func (a *Allocator) takeNamed(ctx context.Context, name string, req Request, fixed *fixedFor, own bool) (*Lease, error) {
	if _, busy := a.inflight.LoadOrStore(name, true); busy {
		// Another call here is writing it: this one would lose.
		if !own {
			return nil, errorf(CodeIPTaken, 409, "IP %s is being given to another container", name)
		}
	} else {
		defer a.inflight.Delete(name)
	}
	for range attempts {
		ip := &v1alpha1.NetIP{}
		if err := a.kube.Get(ctx, types.NamespacedName{Name: name}, ip); err != nil {
			return nil, unavailable(err)
		}
		if !own && ip.Status.Status != v1alpha1.NetIPAvailable {
			return nil, errorf(CodeIPTaken, 409, "IP %s is %s (host %s, pod %s)", name, ip.Status.Status, ip.Status.Host, ip.Status.PodPrimaryKey)
		}
		if own && v1alpha1.FixedKey(ip.Status) != fixed.key {
			return nil, errorf(CodeIPTaken, 409, "IP %s is no longer kept for %s", name, fixed.key)
		}
		got, err := a.write(ctx, ip, req, fixed)
		if kerrors.IsConflict(err) {
			pause(ctx)
			continue
		}
		if err != nil {
			return nil, unavailable(err)
		}
		return a.bound(ctx, got, fixed)
	}
	return nil, errorf(CodeUnavailable, 503, "IP %s changed %d times while being given; retry", name, attempts)
}

// takeAny takes a free IP of the first pool that has one, in random order
// so that hosts calling at once seldom race for the same IP.
func (a *Allocator) takeAny(ctx context.Context, pools []v1alpha1.NetPool, req Request, fixed *fixedFor) (*Lease, error) {
	tried := map[string]bool{}
	lost, empty := 0, 0
	for lost < attempts {
		free, err := a.free(ctx, pools, tried)
		if err != nil {
			return nil, err
		}
		if len(free) == 0 {
			// After lost races the cache may be behind, or an IP be
			// released meanwhile: look again a few times before saying
			// none is left.
			if lost == 0 || empty == 3 {
				return nil, errorf(CodeNoIPLeft, 409, "no IP left in the NetPools of host %s (%s)", req.Host, poolNames(pools))
			}
			empty++
			clear(tried)
			pause(ctx)
			continue
		}
		empty = 0
		for _, ip := range free {
			tried[ip.Name] = true
			if _, busy := a.inflight.LoadOrStore(ip.Name, true); busy {
				continue
			}
			got, err := a.write(ctx, ip, req, fixed)
			a.inflight.Delete(ip.Name)
			if kerrors.IsConflict(err) || kerrors.IsNotFound(err) {
				lost++
				continue
			}
			if err != nil {
				return nil, unavailable(err)
			}
			return a.bound(ctx, got, fixed)
		}
		lost++
	}
	return nil, errorf(CodeUnavailable, 503, "lost %d races for the IPs of host %s; retry", lost, req.Host)
}

// free lists the Available, listed IPs of pools not yet tried, shuffled
// within each pool, pools in order. The cache's objects are not copied:
// a pool's free IPs are listed on every call, and only the one written is
// copied (in write).
func (a *Allocator) free(ctx context.Context, pools []v1alpha1.NetPool, tried map[string]bool) ([]*v1alpha1.NetIP, error) {
	var out []*v1alpha1.NetIP
	for i := range pools {
		ips := &v1alpha1.NetIPList{}
		if err := a.kube.List(ctx, ips, client.MatchingFields{v1alpha1.NetIPFreeIndex: pools[i].Name}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, unavailable(err)
		}
		listed := make(map[string]bool, len(pools[i].Spec.AvailableIPs))
		for _, s := range pools[i].Spec.AvailableIPs {
			listed[s] = true
		}
		start := len(out)
		for j := range ips.Items {
			ip := &ips.Items[j]
			if ip.Status.Status == v1alpha1.NetIPAvailable && !tried[ip.Name] && ip.DeletionTimestamp == nil && listed[ip.Name] {
				out = append(out, ip)
			}
		}
		rand.Shuffle(len(out)-start, func(x, y int) { out[start+x], out[start+y] = out[start+y], out[start+x] })
	}
	return out, nil
}

// write makes a copy of ip Active for req's container, if ip is still at
// the version read, and waits for the cache to see it.
func (a *Allocator) write(ctx context.Context, ip *v1alpha1.NetIP, req Request, fixed *fixedFor) (*v1alpha1.NetIP, error) {
	ip = ip.DeepCopy()
	read := ip.ResourceVersion
	s := v1alpha1.NetIPStatus{
		Status: v1alpha1.NetIPActive, Host: req.Host, ContainerID: req.ContainerID,
		PodName: req.PodName, PodNamespace: req.PodNamespace, UpdateTime: stamp(a.clock()),
	}
	if req.PodName != "" {
		s.PodPrimaryKey = v1alpha1.PodKey(req.PodNamespace, req.PodName)
	}
	if fixed != nil {
		s.Fixed, s.KeepDuration = true, fixed.keep
		if fixed.claim != nil {
			s.IPClaimKey = v1alpha1.ClaimKey(fixed.claim.Namespace, fixed.claim.Name)
		}
	}
	ip.Status = s
	if err := a.kube.Status().Update(ctx, ip); err != nil {
		return nil, err
	}
	return ip, a.seen(ctx, ip.Name, read)
}

// seen waits until the cache holds a version of name other than read.
func (a *Allocator) seen(ctx context.Context, name, read string) error {
	return wait.PollUntilContextTimeout(ctx, 2*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		ip := &v1alpha1.NetIP{}
		err := a.kube.Get(ctx, types.NamespacedName{Name: name}, ip)
		return kerrors.IsNotFound(err) || err == nil && ip.ResourceVersion != read, client.IgnoreNotFound(err)
	})
}

// bound records a claim's IP on the claim; the NetIP already says so.
func (a *Allocator) bound(ctx context.Context, ip *v1alpha1.NetIP, fixed *fixedFor) (*Lease, error) {
	if fixed != nil && fixed.claim != nil {
		if err := setClaim(ctx, a.kube, ip.Status.IPClaimKey, v1alpha1.ClaimBound, ip.Name); err != nil {
			a.log.Info("Cannot record the bound IP on its claim", "claim", ip.Status.IPClaimKey, "ip", ip.Name, "error", err)
		}
	}
	l := leaseOf(ip)
	return &l, nil
}

// Release frees what req's container holds. A container that holds
// nothing is released already: CNI DEL is retried and must succeed.
func (a *Allocator) Release(ctx context.Context, req Request) ([]Lease, error) {
	if err := validate(req); err != nil {
		return nil, err
	}
	ips := &v1alpha1.NetIPList{}
	if err := a.kube.List(ctx, ips, client.MatchingFields{v1alpha1.NetIPContainerIndex: v1alpha1.ContainerKey(req.Host, req.ContainerID)}); err != nil {
		return nil, unavailable(err)
	}
	return a.release(ctx, ips.Items, func(s v1alpha1.NetIPStatus) bool {
		return s.Status == v1alpha1.NetIPActive && s.Host == req.Host && s.ContainerID == req.ContainerID
	})
}

// ReleaseHost frees every IP held on host (a node that is gone).
func (a *Allocator) ReleaseHost(ctx context.Context, host string) ([]Lease, error) {
	if _, err := netip.ParseAddr(host); err != nil {
		return nil, errorf(CodeMalformed, 400, "host %q is not an IP address", host)
	}
	ips := &v1alpha1.NetIPList{}
	if err := a.kube.List(ctx, ips, client.MatchingFields{v1alpha1.NetIPHostIndex: host}); err != nil {
		return nil, unavailable(err)
	}
	if len(ips.Items) == 0 {
		pools, err := a.poolsOf(ctx, host)
		if err != nil {
			return nil, err
		}
		if len(pools) == 0 {
			return nil, errorf(CodeUnknownHost, 404, "host %s is in no NetPool and holds no IP", host)
		}
	}
	return a.release(ctx, ips.Items, func(s v1alpha1.NetIPStatus) bool { return s.Status == v1alpha1.NetIPActive && s.Host == host })
}

// release frees each IP while still held as held says: a fixed one is
// Reserved for its Pod or claim, any other Available.
func (a *Allocator) release(ctx context.Context, ips []v1alpha1.NetIP, held func(v1alpha1.NetIPStatus) bool) ([]Lease, error) {
	out := make([]Lease, 0, len(ips))
	for i := range ips {
		ip := &ips[i]
		err := retry.OnError(wait.Backoff{Steps: attempts, Duration: time.Millisecond, Factor: 1.5, Cap: 100 * time.Millisecond}, kerrors.IsConflict, func() error {
			if err := a.kube.Get(ctx, client.ObjectKeyFromObject(ip), ip); err != nil {
				return client.IgnoreNotFound(err)
			}
			if !held(ip.Status) {
				return nil
			}
			read := ip.ResourceVersion
			ip.Status = freed(ip.Status, a.clock())
			if err := a.kube.Status().Update(ctx, ip); err != nil {
				return err
			}
			out = append(out, leaseOf(ip))
			return a.seen(ctx, ip.Name, read)
		})
		if err != nil {
			return out, unavailable(err)
		}
	}
	return out, nil
}

// freed is s once its container is gone.
func freed(s v1alpha1.NetIPStatus, now time.Time) v1alpha1.NetIPStatus {
	if !s.Fixed {
		return v1alpha1.NetIPStatus{Status: v1alpha1.NetIPAvailable, UpdateTime: stamp(now)}
	}
	s.Status, s.ContainerID, s.Host, s.UpdateTime, s.FixedIPExpiredTime = v1alpha1.NetIPReserved, "", "", stamp(now), ""
	if d, err := time.ParseDuration(s.KeepDuration); err == nil {
		s.FixedIPExpiredTime = stamp(now.Add(d))
	}
	return s
}

// heldBy is the NetIP the container already holds, if any: a CNI ADD
// retried after a lost answer gets the same IP.
func (a *Allocator) heldBy(ctx context.Context, host, containerID string) (*v1alpha1.NetIP, error) {
	ips := &v1alpha1.NetIPList{}
	if err := a.kube.List(ctx, ips, client.MatchingFields{v1alpha1.NetIPContainerIndex: v1alpha1.ContainerKey(host, containerID)}); err != nil {
		return nil, unavailable(err)
	}
	if len(ips.Items) == 0 {
		return nil, nil
	}
	return &ips.Items[0], nil
}

// fixedOf says whether req's Pod keeps its IP: it names a claim, or a
// StatefulSet owns it. A Pod that cannot be read gets a dynamic IP.
func (a *Allocator) fixedOf(ctx context.Context, req Request) (*fixedFor, error) {
	if req.PodName == "" || req.PodNamespace == "" {
		return nil, nil
	}
	pod := &corev1.Pod{}
	if err := a.api.Get(ctx, types.NamespacedName{Namespace: req.PodNamespace, Name: req.PodName}, pod); err != nil {
		if kerrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, unavailable(err)
	}
	name := pod.Annotations[v1alpha1.AnnotationIPClaim]
	if name == "" {
		name = pod.Annotations[v1alpha1.AnnotationBCSIPClaim]
	}
	if name != "" {
		claim := &v1alpha1.NetIPClaim{}
		if err := a.api.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: name}, claim); kerrors.IsNotFound(err) {
			return nil, errorf(CodeClaimNotFound, 404, "pod %s/%s names NetIPClaim %s, which does not exist", pod.Namespace, pod.Name, name)
		} else if err != nil {
			return nil, unavailable(err)
		}
		f := &fixedFor{claim: claim, wantName: claim.Spec.NetIPName}
		f.key = v1alpha1.FixedKey(v1alpha1.NetIPStatus{Fixed: true, IPClaimKey: v1alpha1.ClaimKey(claim.Namespace, claim.Name)})
		if claim.Spec.ExpiredDuration != nil {
			f.keep = claim.Spec.ExpiredDuration.Duration.String()
		}
		return f, nil
	}
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != "StatefulSet" || !strings.HasPrefix(owner.APIVersion, appsv1.GroupName+"/") {
		return nil, nil
	}
	keep := a.keep
	if v := pod.Annotations[v1alpha1.AnnotationFixedIPKeep]; v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return nil, errorf(CodeMalformed, 400, "pod %s/%s: annotation %s=%q is not a duration of 0 or more, such as 30m or 2h", pod.Namespace, pod.Name, v1alpha1.AnnotationFixedIPKeep, v)
		}
		keep = d
	}
	key := v1alpha1.FixedKey(v1alpha1.NetIPStatus{Fixed: true, PodPrimaryKey: v1alpha1.PodKey(pod.Namespace, pod.Name)})
	return &fixedFor{key: key, keep: keep.String()}, nil
}

// poolsOf lists the live NetPools that list host, by name.
func (a *Allocator) poolsOf(ctx context.Context, host string) ([]v1alpha1.NetPool, error) {
	all := &v1alpha1.NetPoolList{}
	if err := a.kube.List(ctx, all); err != nil {
		return nil, unavailable(err)
	}
	var out []v1alpha1.NetPool
	for _, p := range all.Items {
		if p.DeletionTimestamp == nil && slices.Contains(p.Spec.Hosts, host) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(x, y v1alpha1.NetPool) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}

// listedInPool is false only when ip's pool is among pools and no longer
// lists it; a pool not among them is another answer's business (4041).
func listedInPool(pools []v1alpha1.NetPool, ip *v1alpha1.NetIP) bool {
	for _, p := range pools {
		if p.Name == ip.Spec.Pool {
			return slices.Contains(p.Spec.AvailableIPs, ip.Name)
		}
	}
	return true
}

func listedIn(pools []v1alpha1.NetPool, ip *v1alpha1.NetIP) bool {
	return slices.ContainsFunc(pools, func(p v1alpha1.NetPool) bool {
		return p.Name == ip.Spec.Pool && slices.Contains(p.Spec.AvailableIPs, ip.Name)
	})
}

func poolNames(pools []v1alpha1.NetPool) string {
	names := make([]string, 0, len(pools))
	for _, p := range pools {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}

// setClaim writes a claim's status; a claim that is gone needs none.
func setClaim(ctx context.Context, kube client.Client, key, phase, ip string) error {
	nn, ok := v1alpha1.ParseClaimKey(key)
	if !ok {
		return nil // names no claim
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c := &v1alpha1.NetIPClaim{}
		if err := kube.Get(ctx, nn, c); err != nil {
			return client.IgnoreNotFound(err)
		}
		if !c.Status.SetPhase(phase, ip) {
			return nil
		}
		return client.IgnoreNotFound(kube.Status().Update(ctx, c))
	})
}

func validate(req Request) error {
	if req.Host == "" || req.ContainerID == "" {
		return errorf(CodeMalformed, 400, "host and containerID are required")
	}
	if _, err := netip.ParseAddr(req.Host); err != nil {
		return errorf(CodeMalformed, 400, "host %q is not an IP address", req.Host)
	}
	return nil
}

func lease(ip *v1alpha1.NetIP, err error) (*Lease, error) {
	if err != nil {
		return nil, err
	}
	l := leaseOf(ip)
	return &l, nil
}

// pause lets the cache catch up after a lost race.
func pause(ctx context.Context) {
	t := time.NewTimer(time.Duration(1+rand.IntN(5)) * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// unavailable wraps an API server error: the caller may retry.
func unavailable(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if kerrors.IsForbidden(err) {
		// Not the API server's fault: say what to fix.
		return errorf(CodeUnavailable, 503, "the provider's RBAC refuses a call the allocator needs (see examples/provider/rbac): %v", err)
	}
	return errorf(CodeUnavailable, 503, "cannot reach the API server: %v", err)
}
