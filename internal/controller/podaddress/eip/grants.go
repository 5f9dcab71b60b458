package eip

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// A NotGrantedError says that no EIPGrant lets a request have an EIP;
// its message names the grants and the limits exceeded.
type NotGrantedError struct{ Msg string }

func (e *NotGrantedError) Error() string { return e.Msg }

// A GrantQuotaError says that an EIPGrant's count quota is used up.
type GrantQuotaError struct {
	Grant           string
	Max, Held, Warm int32
}

func (e *GrantQuotaError) Error() string {
	return fmt.Sprintf("EIPGrant %s allows %d EIPs at once and all are in use (%d held by PodAddresses, %d warm)", e.Grant, e.Max, e.Held, e.Warm)
}

// warmCount is what one warm pool holds (or is about to allocate) under
// a grant.
type warmCount struct {
	grant string
	ref   xpv2.ProviderConfigReference
	n     int32
}

// Grants chooses the EIPGrant that serves an EIP request and keeps, per
// grant, the count its quota bounds: the PodAddresses whose status records
// an EIP of the grant, and the warm EIPs of its policies. The PodAddress
// side is rebuilt from the statuses (read from the API server) on first
// use and follows every status write after (Observe), so the quota holds
// across restarts; a reservation is taken under the lock before the
// status records it, so it holds under concurrent reconciles. Until the
// warmer has counted the warm pools once, each grant's warm EIPs count as
// its maxWarm.
type Grants struct {
	kube client.Client // EIPGrants (cached reads, status writes)
	api  client.Reader // Namespaces and PodAddresses (uncached)
	log  logging.Logger

	mu        sync.Mutex
	loaded    bool
	holders   map[types.NamespacedName]string // PodAddress → grant of its EIP
	warm      map[string]warmCount            // warm pool → its count
	warmKnown bool
	changed   chan struct{}
}

// NewGrants returns Grants that read EIPGrants from kube and Namespaces
// and PodAddresses from api.
func NewGrants(kube client.Client, api client.Reader, log logging.Logger) *Grants {
	return &Grants{kube: kube, api: api, log: log, holders: map[types.NamespacedName]string{}, warm: map[string]warmCount{}, changed: make(chan struct{}, 1)}
}

// Choose returns the grant that serves req for a Pod of namespace, or a
// NotGrantedError. Nothing is sent to the cloud before it answers.
func (g *Grants) Choose(ctx context.Context, namespace string, req *v1alpha1.EIPRequest) (*v1alpha1.EIPGrant, error) {
	l := &v1alpha1.EIPGrantList{}
	if err := g.kube.List(ctx, l); err != nil {
		return nil, errors.Wrap(err, "cannot list EIPGrants")
	}
	var nsLabels map[string]string
	for i := range l.Items {
		if l.Items[i].Spec.Namespaces.Selector != nil {
			ns := &corev1.Namespace{}
			if err := g.api.Get(ctx, types.NamespacedName{Name: namespace}, ns); err != nil {
				return nil, errors.Wrapf(err, "cannot get namespace %s to match EIPGrant selectors", namespace)
			}
			nsLabels = ns.GetLabels()
			break
		}
	}
	gr, err := v1alpha1.ChooseGrant(l.Items, namespace, nsLabels, req)
	if err != nil {
		return nil, &NotGrantedError{Msg: err.Error()}
	}
	return gr, nil
}

// load rebuilds the holders from every PodAddress's status; called with
// the lock held.
func (g *Grants) load(ctx context.Context) error {
	if g.loaded {
		return nil
	}
	l := &v1alpha1.PodAddressList{}
	if err := g.api.List(ctx, l); err != nil {
		return errors.Wrap(err, "cannot list PodAddresses to count the EIPs of each EIPGrant")
	}
	for i := range l.Items {
		if gr := grantOf(&l.Items[i]); gr != "" {
			g.holders[client.ObjectKeyFromObject(&l.Items[i])] = gr
		}
	}
	g.loaded = true
	return nil
}

// grantOf is the grant whose EIP pa's status records, "" for none.
func grantOf(pa *v1alpha1.PodAddress) string {
	if !Active(pa) {
		return ""
	}
	return pa.Status.EIP.Grant
}

// counts returns the EIPs of grant held by PodAddresses and its warm
// ones; called with the lock held.
func (g *Grants) counts(gr *v1alpha1.EIPGrant) (held, warm int32) {
	for _, name := range g.holders {
		if name == gr.GetName() {
			held++
		}
	}
	if !g.warmKnown {
		return held, gr.MaxWarm()
	}
	for _, w := range g.warm {
		if w.grant == gr.GetName() {
			warm += w.n
		}
	}
	return held, warm
}

// Reserve counts an EIP of gr for the PodAddress key before its status
// records it, or returns a GrantQuotaError when gr's maxEIPs is reached.
// fromWarm takes the EIP from the warm pool of that key instead: the
// count does not grow. The caller records the EIP next, or calls Observe
// with what it recorded instead.
func (g *Grants) Reserve(ctx context.Context, gr *v1alpha1.EIPGrant, key types.NamespacedName, fromWarm string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.load(ctx); err != nil {
		return err
	}
	if g.holders[key] == gr.GetName() {
		return nil
	}
	if w, ok := g.warm[fromWarm]; ok && fromWarm != "" && w.grant == gr.GetName() && w.n > 0 {
		w.n--
		g.warm[fromWarm] = w
		g.holders[key] = gr.GetName()
		g.kick()
		return nil
	}
	held, warm := g.counts(gr)
	if held+warm >= gr.Spec.MaxEIPs {
		return &GrantQuotaError{Grant: gr.GetName(), Max: gr.Spec.MaxEIPs, Held: held, Warm: warm}
	}
	g.holders[key] = gr.GetName()
	g.kick()
	return nil
}

// warmBack counts again, as a warm EIP of pool, one whose take Reserve
// counted but whose record failed: it is back in the pool, and without
// this the grant would undercount until the warmer's next round.
func (g *Grants) warmBack(pool string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w, ok := g.warm[pool]; ok {
		w.n++
		g.warm[pool] = w
		g.kick()
	}
}

// Observe follows a written status of pa: the grant it holds an EIP of,
// or none.
func (g *Grants) Observe(pa *v1alpha1.PodAddress) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.loaded {
		return // the load reads it
	}
	key := client.ObjectKeyFromObject(pa)
	gr := grantOf(pa)
	if g.holders[key] == gr {
		return
	}
	if gr == "" {
		delete(g.holders, key)
	} else {
		g.holders[key] = gr
	}
	g.kick()
}

// WarmAllowed returns how many warm EIPs pool (a policy's) may keep under
// gr, up to want: within gr's maxWarm and maxEIPs with the other pools
// and the held EIPs counted; the pool's count is set to it before the
// warmer allocates.
func (g *Grants) WarmAllowed(ctx context.Context, gr *v1alpha1.EIPGrant, pool string, want int32) (int32, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.load(ctx); err != nil {
		return 0, err
	}
	held, _ := g.counts(gr)
	var others int32
	for k, w := range g.warm {
		if k != pool && w.grant == gr.GetName() {
			others += w.n
		}
	}
	n := max(min(want, gr.MaxWarm()-others, gr.Spec.MaxEIPs-held-others), 0)
	g.warm[pool] = warmCount{grant: gr.GetName(), ref: gr.Spec.ProviderConfigRef, n: n}
	g.kick()
	return n, nil
}

// WarmHas sets how many free warm EIPs pool holds under the grant
// WarmAllowed counted it under.
func (g *Grants) WarmHas(pool string, n int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w, ok := g.warm[pool]; ok && w.n != n {
		w.n = n
		g.warm[pool] = w
		g.kick()
	}
}

// WarmCounted ends a round of the warmer: pools it did not see hold
// nothing, and the warm counts are known from now on.
func (g *Grants) WarmCounted(seen map[string]bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k := range g.warm {
		if !seen[k] {
			delete(g.warm, k)
		}
	}
	g.warmKnown = true
	g.kick()
}

// WarmGrant returns the grant pool's warm EIPs were allocated under and
// its provider config; ok is false when this process counted none.
func (g *Grants) WarmGrant(pool string) (grant string, ref xpv2.ProviderConfigReference, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w, ok := g.warm[pool]
	return w.grant, w.ref, ok
}

func (g *Grants) kick() {
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

// NeedLeaderElection: only the leader writes the grants' statuses.
func (g *Grants) NeedLeaderElection() bool { return true }

// grantStatusInterval is how often the grants' statuses are written even
// when no count changed (a new grant, one whose status was changed by
// someone else).
const grantStatusInterval = 30 * time.Second

// Start writes each grant's counts to its status after they change (at
// most once a second) and every grantStatusInterval, until ctx ends.
func (g *Grants) Start(ctx context.Context) error {
	for {
		if err := g.writeStatuses(ctx); err != nil && ctx.Err() == nil {
			g.log.Info("Cannot write the status of EIPGrants", "error", err)
		}
		t := time.NewTimer(grantStatusInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-g.changed:
			t.Stop()
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		case <-t.C:
		}
	}
}

func (g *Grants) writeStatuses(ctx context.Context) error {
	l := &v1alpha1.EIPGrantList{}
	if err := g.kube.List(ctx, l); err != nil {
		return errors.Wrap(err, "cannot list EIPGrants")
	}
	var errs []error
	for i := range l.Items {
		gr := &l.Items[i]
		g.mu.Lock()
		err := g.load(ctx)
		held, warm := g.counts(gr)
		g.mu.Unlock()
		if err != nil {
			return err
		}
		if gr.Status.EIPs == held && gr.Status.Warm == warm {
			continue
		}
		gr.Status.EIPs, gr.Status.Warm = held, warm
		if err := g.kube.Status().Update(ctx, gr); client.IgnoreNotFound(err) != nil {
			errs = append(errs, errors.Wrapf(err, "cannot write the status of EIPGrant %s", gr.GetName()))
		}
	}
	return errors.Join(errs...)
}
