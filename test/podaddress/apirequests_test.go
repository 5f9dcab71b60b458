package podaddress

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// podResources are the resources a Pod's binding writes: the PodAddress,
// the Pod, their status, Events and policy status. Other resources (the
// API server's own leases, the load balancers' and pools' status, written
// by their managed resource reconciles) are printed, not counted.
var podResources = []string{"pods", "podaddresses", "events", "podaddresspolicies"}

// podWrite reports whether r is a write to a Pod's resources that the API
// server carried out. A write refused with 409 Conflict (from a stale
// cache, more frequent on a busy machine) changed nothing; it is printed
// and bounded on its own.
func podWrite(r testenv.APIRequest) bool {
	return r.Write() && !r.Conflict && slices.Contains(podResources, r.Resource)
}

// TestAPIRequestsPerPod binds n Pods, then deletes them, and counts the
// provider's requests to the API server by verb and resource, as the API
// server itself counts them (apiserver_request_total), minus the test's
// own requests, which it tallies. A bound Pod costs the PodAddress's
// create, which already records its ports and targets (they are recorded
// before they are registered, so that a provider killed in between
// deregisters them), exactly one write to the Pod, and a status write for
// each state it passes through: usually only Bound (3 writes a Pod, the
// target make bench measures), but on a busy machine a reconcile may find
// a port's listener or the Pod's IP not there yet and record Pending,
// WaitBackend or Allocated first, so the test allows the four states and
// prints what happened. A deleted one costs at most 2 (the PodAddress's
// delete, its finalizer's removal). No Normal Event is written per Pod,
// and the hot path reads only from the cache: no GET or LIST reaches the
// API server.
//
// Half the Pods have the address readiness gate: the condition it waits on
// is written with the addresses, in the same request.
func TestAPIRequestsPerPod(t *testing.T) {
	// maxStates is how many states a PodAddress may record on its way to
	// Bound.
	const maxStates = 4
	const n = 60
	startProvider(t)
	ns := namespace(t)
	lb(t, ns, "lb-a", "BGP")
	lb(t, ns, "lb-b", "BGP")
	pool(t, ns, "reqs", []string{"lb-a", "lb-b"}, 33000, 33000+n/2-1)
	ctx := context.Background()

	// The test's own requests, subtracted from the API server's counts.
	mine := testenv.APIRequests{}
	own := func(verb, resource, sub string) {
		mine[testenv.APIRequest{Verb: verb, Resource: resource, Subresource: sub}]++
	}
	before := scrape(t)

	pods := make([]*corev1.Pod, n)
	for i := range pods {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("gs-%02d", i), Annotations: map[string]string{ourPorts: "7777 reqs"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "example/server", Ports: []corev1.ContainerPort{{ContainerPort: 7777, Protocol: corev1.ProtocolTCP}}}}},
		}
		if i%2 == 0 {
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: podannotation.ConditionAddressReady}}
		}
		if err := kube.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		own("POST", "pods", "")
		pods[i] = p
	}
	// The kubelet's part, from the objects just created: a read only when
	// the provider wrote the Pod in between.
	for i, p := range pods {
		ip := fmt.Sprintf("10.80.0.%d", i+1)
		eventually(t, "set the IP of "+p.Name, func() error {
			p.Status.Phase = corev1.PodRunning
			p.Status.PodIP, p.Status.PodIPs, p.Status.HostIP = ip, []corev1.PodIP{{IP: ip}}, "10.0.0.1"
			own("PUT", "pods", "status")
			err := kube.Status().Update(ctx, p)
			if kerrors.IsConflict(err) {
				own("GET", "pods", "")
				_ = kube.Get(ctx, client.ObjectKeyFromObject(p), p)
			}
			return err
		})
	}
	eventually(t, "every Pod told its address", func() error {
		l := &corev1.PodList{}
		own("LIST", "pods", "")
		if err := kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
		told := 0
		for _, p := range l.Items {
			gated := len(p.Spec.ReadinessGates) > 0
			ready := slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == podannotation.ConditionAddressReady && c.Status == corev1.ConditionTrue
			})
			if p.Annotations[podannotation.AnnotationStatus] != "" && (!gated || ready) {
				told++
			}
		}
		if told != n {
			return errors.Errorf("%d of %d Pods told", told, n)
		}
		return nil
	})
	bound := settled(t, before, mine)
	if b := countBound(t, ns); b != n {
		t.Fatalf("%d of %d PodAddresses Bound", b, n)
	}
	own("LIST", "podaddresses", "")
	bound = bound.Sub(mine)
	report(t, "binding", bound, n)
	writes := bound.Count(func(r testenv.APIRequest) bool { return podWrite(r) })
	t.Logf("binding %d Pods wrote %g times (%.2f a Pod; 3 when each status is written once)", n, writes, writes/n)
	if c := bound.Of("POST", "podaddresses", ""); c != n {
		t.Errorf("%g PodAddresses created for %d Pods", c, n)
	}
	if st := bound.Of("PUT", "podaddresses", "status"); st > maxStates*n {
		t.Errorf("%g PodAddress status writes for %d Pods, want at most %d a Pod (Pending, WaitBackend, Allocated, Bound)", st, n, maxStates)
	}
	if pw := bound.Count(func(r testenv.APIRequest) bool { return r.Write() && !r.Conflict && r.Resource == "pods" }); pw != n {
		t.Errorf("%g writes to %d Pods, want one a Pod (annotations and condition together)", pw, n)
	}
	if e := bound.Of("POST", "events", ""); e > 0 {
		t.Errorf("binding %d Pods wrote %g Events; only Warnings are written by default", n, e)
	}
	uncached(t, "binding", bound)

	// Deletion: each Pod's PodAddress is deleted, its targets deregistered
	// and its finalizer removed.
	before, mine = scrape(t), testenv.APIRequests{}
	for _, p := range pods {
		if err := kube.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
			t.Fatal(err)
		}
		own("DELETE", "pods", "")
	}
	eventually(t, "every PodAddress gone", func() error {
		l := &v1alpha1.PodAddressList{}
		own("LIST", "podaddresses", "")
		if err := kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
		if len(l.Items) > 0 {
			return errors.Errorf("%d PodAddresses left", len(l.Items))
		}
		return nil
	})
	gone := settled(t, before, mine).Sub(mine)
	report(t, "deletion", gone, n)
	writes = gone.Count(func(r testenv.APIRequest) bool { return podWrite(r) })
	if writes > 2*n {
		t.Errorf("deleting %d Pods wrote %g times (%.2f a Pod), want at most 2 a Pod", n, writes, writes/n)
	}
	uncached(t, "deletion", gone)
	if left := targetsIn(cloud); slices.ContainsFunc(left, func(s string) bool { return strings.Contains(s, " 10.80.0.") }) {
		t.Errorf("targets left in the cloud: %v", left)
	}
}

func scrape(t *testing.T) testenv.APIRequests {
	t.Helper()
	r, err := testenv.ScrapeAPIRequests(context.Background(), env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// settled waits until the provider stops writing the Pods' resources (two
// scrapes in a row count the same writes) and returns every request since
// before. A write that comes late (a second status write after the Pod was
// told) is counted rather than missed. mine are the test's own requests,
// so that its polls do not look like the provider's.
func settled(t *testing.T, before, mine testenv.APIRequests) testenv.APIRequests {
	t.Helper()
	var last testenv.APIRequests
	stable := 0
	eventually(t, "the provider's writes settle", func() error {
		now := scrape(t).Sub(before)
		w := func(r testenv.APIRequest) bool { return podWrite(r) }
		if last != nil && now.Count(w) == last.Count(w) {
			stable++
		} else {
			stable = 0
		}
		last = now
		// Ten quiet polls in a row: about half a second without a write.
		if stable < 10 {
			return errors.Errorf("still writing: %g writes", now.Count(w)-mine.Count(w))
		}
		return nil
	})
	return last
}

// report prints the provider's requests by verb and resource.
func report(t *testing.T, phase string, got testenv.APIRequests, n int) {
	t.Helper()
	t.Logf("%s %d Pods: the provider's requests to the API server (apiserver_request_total):\n%s", phase, n, got)
}

// uncached fails on any GET or LIST of the Pods' resources and of what
// their reconciles read (pools, provider configs, Secrets, nodes): those
// reads are served from the provider's cache.
func uncached(t *testing.T, phase string, got testenv.APIRequests) {
	t.Helper()
	read := []string{"pods", "podaddresses", "podaddresspolicies", "portpools", "providerconfigs", "clusterproviderconfigs", "secrets", "nodes", "loadbalancers"}
	for k, v := range got {
		if (k.Verb == "GET" || k.Verb == "LIST") && slices.Contains(read, k.Resource) && v > 0 {
			t.Errorf("%s: %g uncached %s", phase, v, k)
		}
	}
}
