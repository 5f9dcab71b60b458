package crossplane

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	testsuite "github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xplocal"
)

// traceConfig is the ClusterProviderConfig the traced composites name: it
// does not exist until the test creates it, so their managed resources
// cannot reach the cloud before that, which is the "not ready yet" moment
// the trace shows.
const traceConfig = "trace"

// traceNode is one node of `crossplane resource trace -o json`: the object
// as the CLI read it and what it found under it.
type traceNode struct {
	Object   map[string]any `json:"object"`
	Children []*traceNode   `json:"children"`
}

func (n *traceNode) object() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: n.Object}
}

// crossplaneTrace runs the real `crossplane resource trace` (crossplane/cli
// v2.5.0) with kubeconfig and returns its standard output.
func crossplaneTrace(kubeconfig string, args ...string) (string, error) {
	cli, err := testenv.CrossplaneBinary("cli")
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, append([]string{"resource", "trace"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("crossplane resource trace %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// traceJSON traces one object as JSON.
func traceJSON(t *testing.T, kubeconfig, resource, ns, name string) *traceNode {
	t.Helper()
	out, err := crossplaneTrace(kubeconfig, resource, name, "-n", ns, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	root := &traceNode{}
	if err := json.Unmarshal([]byte(out), root); err != nil {
		t.Fatalf("trace output is not a tree: %v\n%s", err, out)
	}
	return root
}

// checkTree asserts that the trace n shows each object as the API server
// has it, with Synced and Ready as its own conditions say, and under it
// exactly what it references: a claim its composite, a composite every
// resource of its resourceRefs. It counts the kinds of the leaves, and
// calls each with every node.
func checkTree(t *testing.T, n *traceNode, leaves map[string]int, each func(*unstructured.Unstructured)) {
	t.Helper()
	u := n.object()
	id := fmt.Sprintf("%s %s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
	live, err := get(u.GroupVersionKind(), u.GetNamespace(), u.GetName())
	if err != nil {
		t.Errorf("trace shows %s: %v", id, err)
		return
	}
	for _, typ := range []string{"Synced", "Ready"} {
		s, why := condition(u, typ)
		ls, lwhy := condition(live, typ)
		if s != ls || why != lwhy {
			t.Errorf("%s: trace shows %s=%s %s, the object says %s %s", id, typ, s, why, ls, lwhy)
		}
	}
	each(live)
	var want []*unstructured.Unstructured
	if xr, err := local.Composite(context.Background(), live); err != nil {
		t.Errorf("%s: its composite: %v", id, err)
	} else if xr != live {
		want = []*unstructured.Unstructured{xr}
	} else {
		want = xplocal.Composed(live)
	}
	key := func(u *unstructured.Unstructured) string {
		return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
	}
	var got, wantKeys []string
	for _, c := range n.Children {
		got = append(got, key(c.object()))
	}
	for _, w := range want {
		wantKeys = append(wantKeys, key(w))
	}
	slices.Sort(got)
	slices.Sort(wantKeys)
	if !slices.Equal(got, wantKeys) {
		t.Errorf("%s: trace shows children %q, the object references %q", id, got, wantKeys)
	}
	if len(n.Children) == 0 {
		leaves[u.GetKind()]++
	}
	for _, c := range n.Children {
		checkTree(t, c, leaves, each)
	}
}

// checkTable asserts the default (table) output has a row for every node
// of the tree, with SYNCED and READY as the objects say.
func checkTable(t *testing.T, table string, root *traceNode) {
	t.Helper()
	rows := map[string][]string{}
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(strings.NewReplacer("├─", "", "└─", "", "│", "").Replace(line))
		if len(f) >= 3 && strings.Contains(f[0], "/") {
			if strings.HasPrefix(f[1], "(") { // the namespace
				f = slices.Delete(f, 1, 2)
			}
			rows[f[0]] = f[1:]
		}
	}
	var walk func(*traceNode)
	walk = func(n *traceNode) {
		u := n.object()
		name := u.GetKind() + "/" + u.GetName()
		synced, _ := condition(u, "Synced")
		ready, _ := condition(u, "Ready")
		want := []string{dash(synced), dash(ready)}
		if r := rows[name]; len(r) < 2 || !slices.Equal(r[:2], want) {
			t.Errorf("table row of %s: %q, want SYNCED READY %q", name, r, want)
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(root)
}

// dash is how the table shows a condition status: "-" when there is none.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// traceBoth traces an object as JSON, checks the tree against the API
// server and its leaves' kinds, then traces it once more as the default
// table, which it logs and checks against the JSON tree.
func traceBoth(t *testing.T, kubeconfig, resource, ns, name string, leaves map[string]int, each func(*unstructured.Unstructured)) *traceNode {
	t.Helper()
	root := traceJSON(t, kubeconfig, resource, ns, name)
	if u := root.object(); u.GetName() != name || u.GetNamespace() != ns {
		t.Fatalf("trace root %s %s/%s, want %s/%s", u.GetKind(), u.GetNamespace(), u.GetName(), ns, name)
	}
	got := map[string]int{}
	checkTree(t, root, got, each)
	if !maps.Equal(got, leaves) {
		t.Errorf("trace of %s %s: composed kinds %v, want %v", resource, name, got, leaves)
	}
	table, err := crossplaneTrace(kubeconfig, resource, name, "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("crossplane resource trace %s %s -n %s\n%s", resource, name, ns, table)
	checkTable(t, table, root)
	return root
}

// isManaged tells a managed resource (it names a provider config) from a
// claim, composite or a kind of ours that never calls the cloud.
func isManaged(u *unstructured.Unstructured) bool {
	_, found, _ := unstructured.NestedMap(u.Object, "spec", "providerConfigRef")
	return found && !strings.Contains(u.GroupVersionKind().Group, "workload")
}

// traced: `crossplane resource trace` on a PodPublicAddress claim and a
// DedicatedCLBService shows the whole tree Crossplane composed with the
// readiness the objects have, first while their provider config is
// missing (nothing reached the cloud), then once everything is ready.
func traced(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	// The kubeconfig xplocal wrote for core: the control plane's admin.
	admin := filepath.Join(suite.Dir, "kubeconfig")
	pc := map[string]any{"kind": "ClusterProviderConfig", "name": traceConfig}

	a, b := suite.ExistingLB(t, "ap-guangzhou", "trace-a"), suite.ExistingLB(t, "ap-guangzhou", "trace-b")
	claim := example(t, "composition/podpublicaddress-claim.yaml", "name: rooms", "name: rooms-trace", "app: rooms", "app: rooms-trace", "lb-rooms01", a, "lb-rooms02", b)
	x, y, z := suite.ExistingLB(t, "ap-chengdu", "trace-x"), suite.ExistingLB(t, "ap-chengdu", "trace-y"), suite.ExistingLB(t, "ap-chengdu", "trace-z")
	dedicated := example(t, "composition/dedicatedclbservice.yaml", "name: gameserver", "name: gameserver-trace", "app: gameserver", "app: gameserver-trace", "lb-xxx", x, "lb-yyy", y, "lb-zzz", z)
	for _, u := range []*unstructured.Unstructured{claim, dedicated} {
		suite.Namespace(t, u.GetNamespace())
		if err := unstructured.SetNestedMap(u.Object, pc, "spec", "providerConfigRef"); err != nil {
			t.Fatal(err)
		}
		if err := kube.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	// The claim composes its two existing load balancers (observed), a pool
	// and a policy; the DedicatedCLBService, which names a region, a pool
	// reaching its three load balancers by region:id, and a policy.
	claimLeaves := map[string]int{"LoadBalancer": 2, "PortPool": 1, "PodAddressPolicy": 1}
	dedicatedLeaves := map[string]int{"PortPool": 1, "PodAddressPolicy": 1}
	traces := []struct {
		resource string
		u        *unstructured.Unstructured
		leaves   map[string]int
	}{
		{"podpublicaddresses.claims.workload.tencentcloud.crossplane.io", claim, claimLeaves},
		{"dedicatedclbservices.workload.tencentcloud.crossplane.io", dedicated, dedicatedLeaves},
	}

	// Not ready yet: wait until everything is composed and every managed
	// resource has failed to find its provider config.
	for _, tr := range traces {
		eventually(t, tr.u.GetKind()+" composed and waiting for its provider config", func() error {
			u, err := get(tr.u.GroupVersionKind(), tr.u.GetNamespace(), tr.u.GetName())
			if err != nil {
				return err
			}
			xr, err := local.Composite(ctx, u)
			if err != nil {
				return err
			}
			composed := xplocal.Composed(xr)
			if n := len(composed); n != sum(tr.leaves) {
				return fmt.Errorf("%d resources composed", n)
			}
			// Crossplane writes the composite's conditions a reconcile
			// after its first status (the function's): a trace in between
			// shows none.
			for _, o := range []*unstructured.Unstructured{u, xr} {
				synced, _ := condition(o, "Synced")
				ready, why := condition(o, "Ready")
				if synced != "True" || ready != "False" {
					return fmt.Errorf("%s %s Synced=%q Ready=%q %s", o.GetKind(), o.GetName(), synced, ready, why)
				}
			}
			for _, c := range composed {
				live, err := get(c.GroupVersionKind(), c.GetNamespace(), c.GetName())
				if err != nil {
					return err
				}
				if s, _ := condition(live, "Synced"); isManaged(live) && s != "False" {
					return fmt.Errorf("%s %s Synced=%q", c.GetKind(), c.GetName(), s)
				}
			}
			return nil
		})
		// The objects are steady now: what the trace shows of each must be
		// what the API server has, and nothing composed is ready but what
		// never calls the cloud.
		traceBoth(t, admin, tr.resource, tr.u.GetNamespace(), tr.u.GetName(), tr.leaves, func(u *unstructured.Unstructured) {
			ready, why := condition(u, "Ready")
			synced, swhy := condition(u, "Synced")
			switch {
			case isManaged(u) && (synced != "False" || !strings.Contains(swhy, traceConfig) || ready == "True"):
				t.Errorf("%s %s before its provider config: Synced=%s %s, Ready=%s %s", u.GetKind(), u.GetName(), synced, swhy, ready, why)
			case u.GetKind() == "PodAddressPolicy":
				// It never calls the cloud: with no Pods selected it is
				// ready at once.
				if ready != "True" {
					t.Errorf("PodAddressPolicy %s with no Pods: Ready=%s %s", u.GetName(), ready, why)
				}
			case !isManaged(u) && (synced != "True" || ready != "False" || !strings.Contains(why, "portpool") && !strings.Contains(why, "composite resource")):
				// The composite names what it waits for (a claim just
				// waits for its composite).
				t.Errorf("%s %s before its resources are ready: Synced=%s, Ready=%s %s", u.GetKind(), u.GetName(), synced, ready, why)
			}
		})
	}

	// Once the provider config exists, everything becomes ready.
	if err := testsuite.ApplyProviderConfig(ctx, kube, suite.Endpoint, func(u *unstructured.Unstructured) {
		if u.GetKind() == "ClusterProviderConfig" {
			u.SetName(traceConfig)
		}
	}); err != nil {
		t.Fatal(err)
	}
	for _, tr := range traces {
		waitReady(t, tr.u.GroupVersionKind(), tr.u.GetNamespace(), tr.u.GetName())
		eventually(t, "everything under "+tr.u.GetKind()+" ready", func() error {
			var errs []string
			root := traceJSON(t, admin, tr.resource, tr.u.GetNamespace(), tr.u.GetName())
			walkTrace(root, func(u *unstructured.Unstructured) {
				for _, typ := range []string{"Synced", "Ready"} {
					if s, why := condition(u, typ); s != "True" {
						errs = append(errs, fmt.Sprintf("%s %s %s=%s %s", u.GetKind(), u.GetName(), typ, s, why))
					}
				}
			})
			if len(errs) > 0 {
				return fmt.Errorf("%s", strings.Join(errs, "; "))
			}
			return nil
		})
		traceBoth(t, admin, tr.resource, tr.u.GetNamespace(), tr.u.GetName(), tr.leaves, func(u *unstructured.Unstructured) {
			for _, typ := range []string{"Synced", "Ready"} {
				if s, why := condition(u, typ); s != "True" {
					t.Errorf("%s %s once ready: %s=%s %s", u.GetKind(), u.GetName(), typ, s, why)
				}
			}
		})
	}
	t.Logf("traced both trees, not ready and ready, in %s", time.Since(start).Round(time.Second))

	// A team member with crossplane-view in namespace demo traces the
	// DedicatedCLBService there (a namespaced composite: all of its tree
	// is in demo), and is refused the claim of another namespace.
	viewer := viewerKubeconfig(t, dedicated.GetNamespace())
	traceBoth(t, viewer, traces[1].resource, dedicated.GetNamespace(), dedicated.GetName(), dedicatedLeaves, func(*unstructured.Unstructured) {})
	if out, err := crossplaneTrace(viewer, traces[0].resource, claim.GetName(), "-n", claim.GetNamespace()); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("a viewer of %s traced a claim in %s: %v\n%s", dedicated.GetNamespace(), claim.GetNamespace(), err, out)
	}

	deleteComposite(t, claimPPA, claim.GetNamespace(), claim.GetName())
	deleteComposite(t, xrDedicated, dedicated.GetNamespace(), dedicated.GetName())
}

// viewerKubeconfig writes the kubeconfig of a user with Crossplane's
// crossplane-view in namespace ns. The chart's crossplane-view aggregates
// every ClusterRole labelled rbac.crossplane.io/aggregate-to-view, which
// Crossplane's RBAC manager makes for each XRD and provider; the local
// control plane runs no controller-manager to aggregate them, so this does
// what its aggregation controller would, once the roles of our XRDs and
// managed resources are there.
func viewerKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	view := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "crossplane-view"}}
	eventually(t, "the RBAC manager's view roles of our kinds", func() error {
		roles := &rbacv1.ClusterRoleList{}
		if err := kube.List(ctx, roles, client.MatchingLabels{"rbac.crossplane.io/aggregate-to-view": "true"}); err != nil {
			return err
		}
		view.Rules = nil
		groups := map[string]bool{}
		for _, r := range roles.Items {
			view.Rules = append(view.Rules, r.Rules...)
			for _, rule := range r.Rules {
				for _, g := range rule.APIGroups {
					groups[g] = true
				}
			}
		}
		for _, g := range []string{"workload.tencentcloud.crossplane.io", "clb.tencentcloud.m.crossplane.io", "network.tencentcloud.m.crossplane.io"} {
			if !groups[g] {
				return fmt.Errorf("no view role for group %s yet", g)
			}
		}
		return nil
	})
	if err := kube.Create(ctx, view); err != nil {
		t.Fatal(err)
	}
	const user = "trace-viewer"
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "crossplane-view-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: view.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := kube.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(ctx, binding); _ = kube.Delete(ctx, view) })
	cfg, err := suite.Env.UserKubeConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// walkTrace calls fn with every object of a trace tree.
func walkTrace(n *traceNode, fn func(*unstructured.Unstructured)) {
	fn(n.object())
	for _, c := range n.Children {
		walkTrace(c, fn)
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
