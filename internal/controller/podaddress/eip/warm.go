package eip

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/vpc"
)

// DefaultWarmInterval is how often warm EIP pools are refilled.
const DefaultWarmInterval = time.Minute

// WarmKey is the warm pool a PodAddress takes from: that of the policy
// that asked for it.
func WarmKey(pa *v1alpha1.PodAddress) (string, bool) {
	name, ok := v1alpha1.ParsePolicySource(pa.Spec.Source)
	if !ok {
		return "", false
	}
	return v1alpha1.PoolKey(pa.GetNamespace(), name), true
}

// A Warmer keeps, per PodAddressPolicy with eipWarm, that many unbound EIPs
// with the policy's attributes allocated, tagged TagWarmPool=namespace/name,
// so that a burst of Pods takes them instead of allocating. A warm EIP is
// free when it is unbound and no PodAddress records it: the statuses are
// read from the API server (not the cache), and an EIP this process handed
// out is never free again, so that an EIP is never given twice, also across
// a restart. Refilled every interval and after each take; it is a manager
// Runnable that needs the leader.
type Warmer struct {
	kube     client.Reader
	grants   *Grants
	api      client.Reader
	vpc      Clients
	log      logging.Logger
	interval time.Duration

	mu    sync.Mutex
	free  map[string][]vpc.Address // warm pool → free EIPs
	taken map[string]bool          // EIP ids handed out by this process
	kick  chan struct{}
}

// NewWarmer returns a Warmer that reads policies from kube, the statuses
// that say which EIPs are taken from api (uncached), and allocates through
// the clients of vpc.
func NewWarmer(kube, api client.Reader, pool *vpc.Pool, grants *Grants, log logging.Logger, interval time.Duration) *Warmer {
	return &Warmer{kube: kube, api: api, vpc: poolClients(pool), grants: grants, log: log, interval: interval, free: map[string][]vpc.Address{}, taken: map[string]bool{}, kick: make(chan struct{}, 1)}
}

// NeedLeaderElection: only the leader allocates.
func (w *Warmer) NeedLeaderElection() bool { return true }

// Start refills the pools until ctx ends.
func (w *Warmer) Start(ctx context.Context) error {
	for {
		if err := w.refill(ctx); err != nil && ctx.Err() == nil {
			w.log.Info("Cannot refill the warm EIP pools", "error", err)
		}
		t := time.NewTimer(w.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		case <-w.kick:
			t.Stop()
		}
	}
}

// take hands out a free warm EIP of pool key with req's attributes.
func (w *Warmer) take(key string, req *v1alpha1.EIPRequest) (vpc.Address, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, ad := range w.free[key] {
		if w.taken[ad.ID] || !matches(ad, req) {
			continue
		}
		w.free[key] = append(w.free[key][:i:i], w.free[key][i+1:]...)
		w.taken[ad.ID] = true
		select {
		case w.kick <- struct{}{}:
		default:
		}
		return ad, true
	}
	return vpc.Address{}, false
}

// giveBack returns an EIP whose take could not be recorded.
func (w *Warmer) giveBack(key string, ad vpc.Address) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.taken, ad.ID)
	w.free[key] = append(w.free[key], ad)
}

// matches reports whether an EIP has the attributes req asks for (the
// API's defaults where req says nothing).
func matches(ad vpc.Address, req *v1alpha1.EIPRequest) bool {
	return ad.ISP == orDefault(req.ISP, "BGP") &&
		ad.ChargeType == orDefault(req.InternetChargeType, "TRAFFIC_POSTPAID_BY_HOUR") &&
		ad.Bandwidth == max(deref(req.Bandwidth), 1)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// refill brings every warm pool to its policy's eipWarm, as far as the
// policy's EIPGrant allows: allocates what is missing in one call per
// pool, and releases free EIPs beyond it or with other attributes (the
// policy changed). Once every pool was counted, the grants know their
// warm EIPs.
func (w *Warmer) refill(ctx context.Context) error {
	// Policies from the cache: a policy seen a moment late only delays
	// its pool's refill. Only the statuses that say which EIPs are taken
	// are read from the API server, and only when a policy asks for EIPs.
	pols := &v1alpha1.PodAddressPolicyList{}
	if err := w.kube.List(ctx, pols); err != nil {
		return errors.Wrap(err, "cannot list PodAddressPolicies")
	}
	var errs []error
	var recorded map[string]bool
	seen := map[string]bool{}
	for i := range pols.Items {
		pol := &pols.Items[i]
		if pol.Spec.EIP == nil || (pol.Spec.EIPWarm == nil && !w.known(pol)) {
			continue
		}
		if recorded == nil {
			var err error
			if recorded, err = w.recorded(ctx); err != nil {
				return err
			}
		}
		seen[v1alpha1.PoolKey(pol.GetNamespace(), pol.GetName())] = true
		errs = append(errs, w.refillPool(ctx, pol, recorded))
	}
	w.grants.WarmCounted(seen)
	return errors.Join(errs...)
}

// known reports whether this process keeps a warm pool for pol.
func (w *Warmer) known(pol *v1alpha1.PodAddressPolicy) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.free[v1alpha1.PoolKey(pol.GetNamespace(), pol.GetName())]
	return ok
}

// recorded lists the EIPs every PodAddress records, read from the API
// server.
func (w *Warmer) recorded(ctx context.Context) (map[string]bool, error) {
	l := &v1alpha1.PodAddressList{}
	if err := w.api.List(ctx, l); err != nil {
		return nil, errors.Wrap(err, "cannot list PodAddresses")
	}
	ids := map[string]bool{}
	for _, pa := range l.Items {
		if e := pa.Status.EIP; e != nil && e.AddressID != "" {
			ids[e.AddressID] = true
		}
	}
	return ids, nil
}

func (w *Warmer) refillPool(ctx context.Context, pol *v1alpha1.PodAddressPolicy, recorded map[string]bool) error {
	key := v1alpha1.PoolKey(pol.GetNamespace(), pol.GetName())
	var want int32
	if pol.Spec.EIPWarm != nil {
		want = *pol.Spec.EIPWarm
	}
	// The grant of the policy's namespace and request pays for the pool:
	// through its provider config, within its maxWarm and maxEIPs. With
	// none, the pool keeps nothing, and what this process allocated under
	// a grant before is released through that grant's config.
	gr, err := w.grants.Choose(ctx, pol.GetNamespace(), pol.Spec.EIP)
	var ref xpv2.ProviderConfigReference
	switch {
	case err == nil:
		ref = gr.Spec.ProviderConfigRef
		if want, err = w.grants.WarmAllowed(ctx, gr, key, want); err != nil {
			return err
		}
	case errors.As(err, new(*NotGrantedError)):
		_, was, ok := w.grants.WarmGrant(key)
		if !ok {
			return nil
		}
		ref, want = was, 0
	default:
		return err
	}
	cfg, err := clients.Resolve(ctx, w.kube, ref, pol.GetNamespace())
	if err != nil {
		return err
	}
	c, err := w.vpc(cfg)
	if err != nil {
		return err
	}
	all, err := c.DescribeByTag(ctx, TagWarmPool, key)
	if err != nil {
		return errors.Wrapf(err, "cannot list warm pool %s", key)
	}

	// An EIP still being created is free too: the Pod that takes it waits
	// for it before associating it.
	w.mu.Lock()
	var free []vpc.Address
	var surplus []string
	for _, ad := range all {
		switch {
		case recorded[ad.ID] || w.taken[ad.ID] || bound(ad):
			// a Pod's
		case !matches(ad, pol.Spec.EIP) || len(free) >= int(want):
			surplus = append(surplus, ad.ID)
		case ad.Status == vpc.StatusUnbind || ad.Status == vpc.StatusCreating:
			free = append(free, ad)
		}
	}
	w.free[key] = free
	w.mu.Unlock()
	missing := int(want) - len(free)
	if missing <= 0 {
		// Otherwise the pool stays counted at want (WarmAllowed) while
		// the allocation is out, so that Pods do not take its places.
		w.grants.WarmHas(key, int32(len(free)))
	}

	if len(surplus) > 0 {
		// Each idle EIP is billed by the hour: give back what is not wanted.
		if _, err := c.Release(ctx, surplus); err != nil && !vpc.IsNotFound(err) && !vpc.IsBusy(err) {
			return errors.Wrapf(err, "cannot release surplus warm EIPs of %s", key)
		}
	}
	if missing <= 0 {
		return nil
	}
	// Counted at want (WarmAllowed) while the call is out.
	ids, _, err := c.Allocate(ctx, vpc.AllocateRequest{
		Count: int64(missing), Name: "warm " + key,
		ISP: pol.Spec.EIP.ISP, ChargeType: pol.Spec.EIP.InternetChargeType, Bandwidth: deref(pol.Spec.EIP.Bandwidth),
		Tags: ownerTags(v1alpha1.PodAddressPolicyKind, pol, TagWarmPool, key),
	})
	switch {
	case vpc.IsQuotaExceeded(err), vpc.IsDailyLimit(err):
		// Pods then allocate (and fall back) on their own; the next round
		// tries again.
		w.grants.WarmHas(key, int32(len(free)))
		return errors.Wrapf(err, "warm pool %s: cannot allocate %d EIPs", key, missing)
	case err != nil:
		// The call may have landed: the pool stays counted at want until
		// the next round lists it.
		return errors.Wrapf(err, "warm pool %s", key)
	}
	// The new EIPs can be taken at once, while they are being created.
	w.grants.WarmHas(key, int32(len(free)+len(ids)))
	w.mu.Lock()
	for _, id := range ids {
		w.free[key] = append(w.free[key], vpc.Address{ID: id, Status: vpc.StatusCreating,
			ISP: orDefault(pol.Spec.EIP.ISP, "BGP"), ChargeType: orDefault(pol.Spec.EIP.InternetChargeType, "TRAFFIC_POSTPAID_BY_HOUR"),
			Bandwidth: max(deref(pol.Spec.EIP.Bandwidth), 1)})
	}
	w.mu.Unlock()
	return nil
}
