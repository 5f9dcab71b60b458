package podaddress

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// TestTargetDriftRepaired binds 20 Pods on a pool of 2 load balancers with
// 30 listeners each, then, behind the provider's back, deregisters two
// targets, re-weights one and adds two foreign targets (one on a bound
// listener, one on a free listener of the pool). The audit, every 2 s,
// must re-register the two, reset the weight and deregister the foreign
// ones, say so in Events and podaddress_target_drift_total, and describe
// the targets in one DescribeTargets per 20 listeners per load balancer
// per round (2 × 2 here), not one per Pod.
func TestTargetDriftRepaired(t *testing.T) {
	const pods, lbs, ports = 20, 2, 30
	const interval = 2 * time.Second
	const callsPerRound = lbs * ((ports + 19) / 20) // load balancers × listener batches of 20
	startProvider(t, suite.PodAddress(podaddress.Options{TargetAuditInterval: interval}))
	ns := namespace(t)
	emu, ref := ownCloud(t, ns, nil)
	names := lbsOn(t, ns, lbs, ref)
	pp := pool(t, ns, "drift", names, 43000, 43000+ports-1, func(pp *clbv1alpha1.PortPool) {
		pp.Spec.ProviderConfigReference = ref
	})

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	for i := range pods {
		if _, err := churnPod(ctx, ns, fmt.Sprintf("gs-%02d", i), "drift", fmt.Sprintf("10.63.0.%d", i+1), false); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "every Pod Bound", func() error {
		if n := countBound(t, ns); n != pods {
			return errors.Errorf("%d of %d Bound; %s", n, pods, notBound(t, ns))
		}
		return nil
	})
	pas := &v1alpha1.PodAddressList{}
	if err := kube.List(ctx, pas, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	sort.Slice(pas.Items, func(i, j int) bool { return pas.Items[i].Name < pas.Items[j].Name })
	target := func(i int) (string, clb.Target) {
		b := pas.Items[i].Status.Bindings[0]
		return b.LoadBalancerID, clb.Target{ListenerID: b.ListenerIDs["TCP"], EniIP: b.TargetIP, Port: int64(b.TargetPort)}
	}
	used := map[string]bool{}
	for i := range pas.Items {
		_, tg := target(i)
		used[tg.ListenerID] = true
	}
	// A listener of the pool that no Pod holds.
	free := ""
	freeLB := ""
	if err := kube.Get(ctx, client.ObjectKeyFromObject(pp), pp); err != nil {
		t.Fatal(err)
	}
	for _, l := range pp.Status.AtProvider.LoadBalancers {
		for _, id := range l.Listeners {
			if !used[id] && free == "" {
				free, freeLB = id, l.ID
			}
		}
	}
	if free == "" {
		t.Fatal("no free listener in the pool")
	}

	before := driftCounts(t)
	auditsBefore := counterValue(t, "podaddress_target_audits_total", "")

	// Behind the provider's back, as another tool with the same account.
	out, err := clb.NewPool(clb.Options{}).Client(clients.Config{SecretID: emulatortest.ConsoleSecretID, SecretKey: emulatortest.ConsoleSecretKey,
		Region: emulator.DefaultRegion, Endpoint: emu.Endpoint(), Scheme: "http"})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1} {
		lb, tg := target(i)
		if _, err := out.DeregisterTargets(ctx, lb, []clb.Target{tg}); err != nil {
			t.Fatal(err)
		}
	}
	lb2, tg2 := target(2)
	tg2.Weight = ptrTo(int64(50))
	if task, err := out.ModifyTargetWeight(ctx, lb2, []clb.Target{tg2}); err != nil {
		t.Fatal(err)
	} else {
		waitOutsiderTask(ctx, t, out, task)
	}
	lb3, tg3 := target(3)
	foreign := []struct {
		lb string
		t  clb.Target
	}{
		{lb3, clb.Target{ListenerID: tg3.ListenerID, EniIP: "10.250.0.1", Port: 9000}},
		{freeLB, clb.Target{ListenerID: free, EniIP: "10.250.0.2", Port: 9000}},
	}
	for _, f := range foreign {
		if _, err := out.RegisterTargets(ctx, f.lb, []clb.Target{f.t}); err != nil {
			t.Fatal(err)
		}
	}
	// An audit round may have run (and repaired some) while the changes
	// were being made on a busy machine; only without one must all five
	// show. The counts below hold either way.
	if drift := cloudDrift(emu, pas.Items); len(drift) != 5 {
		// A round that repaired some may still be finishing: it is
		// counted when it ends.
		err := testenv.Eventually(ctx, 2*interval, func() error {
			if counterValue(t, "podaddress_target_audits_total", "") == auditsBefore {
				return errors.New("no audit round ended")
			}
			return nil
		})
		if err != nil {
			t.Fatalf("the cloud should differ in 5 targets before the audit, got %v", drift)
		}
	}
	emu.ResetCounters()
	start := time.Now()

	eventually(t, "every target repaired and the foreign ones gone", func() error {
		if drift := cloudDrift(emu, pas.Items); len(drift) > 0 {
			return errors.Errorf("%d differences: %v", len(drift), drift)
		}
		return nil
	})
	took := time.Since(start)
	rounds := counterValue(t, "podaddress_target_audits_total", "") - auditsBefore
	calls := emu.Calls()
	describes := emu.CallCount("DescribeTargets")
	t.Logf("repaired in %s over %.0f audit rounds; DescribeTargets calls: %d (%.1f per round; the bound is %d per round, one per Pod would be %d); all calls: %v",
		took.Round(time.Millisecond), rounds, describes, float64(describes)/max(rounds, 1), callsPerRound, pods, calls)
	// A round may be in flight at either end of the count.
	if limit := int(rounds+1) * callsPerRound; describes > limit {
		t.Errorf("%d DescribeTargets calls in %.0f rounds; want at most %d (load balancers × listener batches per round)", describes, rounds, limit)
	}
	if rounds < 2 {
		t.Errorf("%.0f audit rounds; a foreign target needs two", rounds)
	}

	after := driftCounts(t)
	for kind, want := range map[string]float64{"missing": 2, "weight": 1, "foreign": 2} {
		if got := after[kind] - before[kind]; got != want {
			t.Errorf("podaddress_target_drift_total{drift=%q} grew by %v, want %v", kind, got, want)
		}
	}
	eventually(t, "Events for the repairs", func() error {
		l := &corev1.EventList{}
		if err := kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
		want := map[string]bool{
			"PodAddress/" + pas.Items[0].Name + "/TargetRepaired": false,
			"PodAddress/" + pas.Items[1].Name + "/TargetRepaired": false,
			"PodAddress/" + pas.Items[2].Name + "/TargetRepaired": false,
			"PortPool/drift/ForeignTargetRemoved":                 false,
		}
		for _, e := range l.Items {
			k := e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name + "/" + e.Reason
			if _, ok := want[k]; ok {
				want[k] = true
			}
		}
		var missing []string
		for k, seen := range want {
			if !seen {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			return errors.Errorf("no Event %v", missing)
		}
		return nil
	})
	for i := range pods {
		if st := bound(t, ns, pas.Items[i].Name).Status.State; st != v1alpha1.StateBound {
			t.Errorf("%s is %s after the repair", pas.Items[i].Name, st)
		}
	}

	// Once repaired, rounds only describe: no target is written again.
	emu.ResetCounters()
	r0 := counterValue(t, "podaddress_target_audits_total", "")
	eventually(t, "two more audit rounds", func() error {
		if n := counterValue(t, "podaddress_target_audits_total", "") - r0; n < 2 {
			return errors.Errorf("%.0f rounds", n)
		}
		return nil
	})
	calls = emu.Calls()
	t.Logf("calls of quiet rounds: %v", calls)
	for _, action := range []string{"BatchRegisterTargets", "BatchDeregisterTargets", "BatchModifyTargetWeight"} {
		if n := emu.CallCount(action); n > 0 {
			t.Errorf("quiet audit rounds made %d %s calls", n, action)
		}
	}
	if emu.CallCount("DescribeTargets") == 0 {
		t.Error("quiet audit rounds described nothing")
	}
}

// cloudDrift lists how the emulator differs from the recorded bindings
// of pas: a recorded target missing or not of weight 10, or a target
// nobody recorded on a listener of theirs or of the pool.
func cloudDrift(emu *emulator.Emulator, pas []v1alpha1.PodAddress) []string {
	want := map[string]bool{} // listener/ip:port
	for _, pa := range pas {
		for _, b := range pa.Status.Bindings {
			want[fmt.Sprintf("%s/%s:%d", b.ListenerIDs["TCP"], b.TargetIP, b.TargetPort)] = true
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, lb := range emu.Inventory().LoadBalancers {
		for _, l := range lb.Listeners {
			for _, tg := range l.Targets {
				k := fmt.Sprintf("%s/%s:%d", l.ID, tg.IP, tg.Port)
				seen[k] = true
				switch {
				case !want[k]:
					out = append(out, "foreign "+k)
				case tg.Weight != 10:
					out = append(out, fmt.Sprintf("weight %d of %s", tg.Weight, k))
				}
			}
		}
	}
	for k := range want {
		if !seen[k] {
			out = append(out, "missing "+k)
		}
	}
	slices.Sort(out)
	return out
}

// driftCounts reads podaddress_target_drift_total by drift.
func driftCounts(t *testing.T) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, kind := range []string{"missing", "weight", "foreign"} {
		out[kind] = counterValue(t, "podaddress_target_drift_total", kind)
	}
	return out
}

// counterValue reads a counter of the process's registry, by its drift
// label if given; 0 if it has no sample yet.
func counterValue(t *testing.T, name, drift string) float64 {
	t.Helper()
	mfs, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := drift == ""
			for _, l := range m.GetLabel() {
				match = match || (l.GetName() == "drift" && l.GetValue() == drift)
			}
			if match {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// waitOutsiderTask waits for an outsider's asynchronous task to end, so
// the provider does not find the load balancer busy with it.
func waitOutsiderTask(ctx context.Context, t *testing.T, c *clb.Client, task string) {
	t.Helper()
	eventually(t, "task "+task, func() error {
		st, _, err := c.TaskStatus(ctx, task)
		if err != nil {
			return err
		}
		if st == clb.TaskRunning {
			return errors.New("running")
		}
		return nil
	})
}

func ptrTo[T any](v T) *T { return &v }

// TestTargetAuditDuringChurn is TestDeleteWhileBinding with the audit
// every 200 ms: while registrations and deregistrations are in flight and
// the cache lags, the audit must take none of the provider's own targets
// for foreign or missing. It repairs nothing, and nothing leaks.
func TestTargetAuditDuringChurn(t *testing.T) {
	startProvider(t, suite.PodAddress(podaddress.Options{TargetAuditInterval: 200 * time.Millisecond}))
	ns := namespace(t)
	emu, slots := churnPool(t, ns)
	emu.ResetCounters()
	before := driftCounts(t)
	rounds := counterValue(t, "podaddress_target_audits_total", "")

	// Churn again until at least 5 rounds have overlapped it: a round
	// takes 0.5-1 s while the churn competes for DescribeTargets' rate
	// limit, and one churn lasts a few seconds.
	const minRounds = 5
	start, waves := rounds, 0
	for waves < 6 && counterValue(t, "podaddress_target_audits_total", "")-start < minRounds {
		states := watchStates(ns)
		churn(t, ns, "churn", 100, nil)
		nothingLeft(t, ns, "churn", emu, slots, states)
		waves++
	}

	rounds = counterValue(t, "podaddress_target_audits_total", "") - start
	t.Logf("%.0f audit rounds during %d churns of 100 Pods", rounds, waves)
	if rounds < minRounds {
		t.Errorf("only %.0f audit rounds ran in %d churns; the test proves little", rounds, waves)
	}
	after := driftCounts(t)
	for kind, n := range after {
		if d := n - before[kind]; d != 0 {
			t.Errorf("the audit counted %v %s targets during a churn that changed nothing behind the provider's back", d, kind)
		}
	}
}
