package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/loadbalancer"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/portpool"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// holdingCloud serves an emulator behind a handler that lets it create
// each load balancer and then holds the answer of CreateLoadBalancer for
// hold: a provider killed meanwhile has made a load balancer whose id it
// never learnt, the window the provider's adoption must cover.
type holdingCloud struct {
	*emulator.Emulator
	hold    time.Duration
	created atomic.Int64 // CreateLoadBalancer calls the emulator answered
	held    atomic.Int64 // answers being held now
}

func (h *holdingCloud) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-TC-Action") != "CreateLoadBalancer" {
		h.Emulator.ServeHTTP(w, r)
		return
	}
	rec := httptest.NewRecorder()
	h.Emulator.ServeHTTP(rec, r)
	h.held.Add(1)
	h.created.Add(1)
	t := time.NewTimer(h.hold)
	select {
	case <-t.C:
	case <-r.Context().Done(): // the provider was killed
	}
	t.Stop()
	h.held.Add(-1)
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func startHoldingCloud(t *testing.T, ns string, hold time.Duration) (*holdingCloud, *xpv2.ProviderConfigReference) {
	t.Helper()
	cfg := emulator.DefaultConfig()
	cfg.TaskDuration = 20 * time.Millisecond
	emu, err := emulator.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &holdingCloud{Emulator: emu, hold: hold}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		_ = emu.Close()
	})
	return h, ownCloud(t, ns, strings.TrimPrefix(srv.URL, "http://"))
}

// TestKillAfterCreateLoadBalancer creates a LoadBalancer, or a PortPool
// that autoCreates its load balancer, trials times, and each time SIGKILLs
// the provider at a random moment within 400 ms after the cloud made the
// load balancer, most often before the provider heard its id; a fresh
// provider takes over. Every object must end with exactly one load
// balancer (found by its tag and adopted, never created twice), and
// deleting them must leave none.
func TestKillAfterCreateLoadBalancer(t *testing.T) {
	const hold = 300 * time.Millisecond
	kinds := []struct {
		name string
		// create makes object i and returns how to tell it is done and
		// the tag its load balancers carry.
		create func(t *testing.T, ns string, ref *xpv2.ProviderConfigReference, i int) (obj client.Object, done func() error, tagKey string)
	}{
		{"LoadBalancer", func(t *testing.T, ns string, ref *xpv2.ProviderConfigReference, i int) (client.Object, func() error, string) {
			cr := &clbv1alpha1.LoadBalancer{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("lb-%03d", i)}}
			cr.Spec.ForProvider.Type = clb.Ptr("OPEN")
			cr.Spec.ProviderConfigReference = ref
			if err := kube.Create(context.Background(), cr); err != nil {
				t.Fatal(err)
			}
			return cr, func() error { return ready(cr) }, loadbalancer.TagUID
		}},
		{"PortPoolAutoCreate", func(t *testing.T, ns string, ref *xpv2.ProviderConfigReference, i int) (client.Object, func() error, string) {
			pp := &clbv1alpha1.PortPool{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pool-%03d", i)},
				Spec: clbv1alpha1.PortPoolSpec{ForProvider: clbv1alpha1.PortPoolParameters{
					StartPort: 42000, EndPort: 42001,
					// Room for a second load balancer, so that a duplicate
					// would be kept and counted, not refused.
					AutoCreate: &clbv1alpha1.PoolAutoCreate{MaxLoadBalancers: 3,
						Template: clbv1alpha1.LoadBalancerParameters{VipIsp: clb.Ptr("BGP")}},
				}},
			}
			pp.Spec.ProviderConfigReference = ref
			if err := kube.Create(context.Background(), pp); err != nil {
				t.Fatal(err)
			}
			return pp, func() error { return poolComplete(pp, 1) }, portpool.TagPoolUID
		}},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			seed := time.Now().UnixNano()
			rng := rand.New(rand.NewPCG(uint64(seed), 13)) //nolint:gosec // a test's schedule, not a secret
			ns := namespace(t)
			cloud, ref := startHoldingCloud(t, ns, hold)
			p := startProvider(t, "trial-0")
			var objs []client.Object
			var dones []func() error
			var tagKey string
			killsHeld := 0
			start := time.Now()
			for i := range *trials {
				before := cloud.created.Load()
				obj, done, tk := k.create(t, ns, ref, i)
				objs, dones, tagKey = append(objs, obj), append(dones, done), tk
				eventually(t, obj.GetName()+": CreateLoadBalancer answered by the cloud", func() error {
					if cloud.created.Load() == before {
						return errors.New("not yet")
					}
					return nil
				})
				// The moment of the kill is the test's input, not a wait
				// for a condition.
				time.Sleep(time.Duration(rng.Int64N(int64(hold + 100*time.Millisecond))))
				if cloud.held.Load() > 0 {
					killsHeld++
				}
				p.Kill()
				p = startProvider(t, fmt.Sprintf("trial-%d", i+1))
			}
			for i, done := range dones {
				eventually(t, objs[i].GetName()+" done after the kills", done)
			}
			perObj := map[string]int{}
			total := 0
			for _, lb := range cloud.Inventory().LoadBalancers {
				if !lb.Deleting {
					perObj[lb.Tags[tagKey]]++
					total++
				}
			}
			dups := 0
			for _, obj := range objs {
				switch n := perObj[string(obj.GetUID())]; {
				case n == 0:
					t.Errorf("%s: no load balancer tagged %s=%s", obj.GetName(), tagKey, obj.GetUID())
				case n > 1:
					dups += n - 1
					t.Errorf("%s: %d load balancers tagged %s=%s", obj.GetName(), n, tagKey, obj.GetUID())
				}
			}
			if total != len(objs) {
				t.Errorf("%d load balancers in the cloud for %d objects", total, len(objs))
			}

			// Deleting every object leaves no load balancer.
			for _, obj := range objs {
				if err := kube.Delete(context.Background(), obj); err != nil {
					t.Fatal(err)
				}
			}
			leaked := 0
			err := eventuallyErr(func() error {
				leaked = len(cloud.Inventory().LoadBalancers)
				if leaked != 0 {
					return errors.Errorf("%d load balancers left", leaked)
				}
				return nil
			})
			if err != nil {
				t.Errorf("after deleting every object: %v", err)
			}
			t.Logf("SUMMARY kills after CreateLoadBalancer (%s): trials=%d kills=%d killsWhileTheAnswerWasHeld=%d createCalls=%d duplicates=%d leaks=%d in %s (seed %d)",
				k.name, *trials, *trials, killsHeld, cloud.created.Load(), dups, leaked, time.Since(start).Round(time.Second), seed)
		})
	}
}
