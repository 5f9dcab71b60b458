// Package render renders every example of examples/composition with the
// real Crossplane CLI (`crossplane composition render`, v2.5.0) driving the
// real Crossplane core v2.4.0 engine, against the composition function
// running in this test process, and compares the output with golden files
// under testdata. Run with -update to rewrite them.
package render

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/function"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// legacySuffix stands in for the random suffix Crossplane gives the legacy
// XR of a claim, so that the output is the same on every run.
const legacySuffix = "r7x2k"

// A renderCase is one example object rendered, optionally with observed
// composed resources that show the status the function reports.
type renderCase struct {
	example  string // file under examples/composition, or under dir
	dir      string // testdata/<dir> instead of examples/composition
	observed string // file under testdata/observed, or ""
	// composed are the kinds the output must hold, so that -update cannot
	// bless an output that composes nothing.
	composed []string
}

var cases = []renderCase{
	{example: "podpublicaddress.yaml", composed: []string{"LoadBalancer", "LoadBalancer", "PortPool", "PodAddressPolicy"}},
	{example: "podpublicaddress.yaml", observed: "podpublicaddress.yaml", composed: []string{"LoadBalancer", "LoadBalancer", "PortPool", "PodAddressPolicy"}},
	{example: "podpublicaddress-claim.yaml", composed: []string{"LoadBalancer", "LoadBalancer", "PortPool", "PodAddressPolicy"}},
	{example: "podpublicaddress-claim.yaml", observed: "podpublicaddress-claim.yaml", composed: []string{"LoadBalancer", "LoadBalancer", "PortPool", "PodAddressPolicy"}},
	{example: "dedicatedclbservice.yaml", composed: []string{"PortPool", "PodAddressPolicy"}},
	{example: "dedicatedclbservice.yaml", observed: "dedicatedclbservice.yaml", composed: []string{"PortPool", "PodAddressPolicy"}},
	{example: "dedicatedclbservice-claim.yaml", composed: []string{"PortPool", "PodAddressPolicy"}},
	{example: "ingress.yaml", composed: ingressKinds(1, 5, 1, 5)},
	{example: "ingress.yaml", observed: "ingress.yaml", composed: ingressKinds(1, 5, 1, 5)},
	{example: "ingress-claim.yaml", composed: ingressKinds(2, 2*(1+2), 0, 2*(1+2))},
	// bcs-ingress-controller's scenarios with only apiVersion changed (and a
	// namespace where the seed has none).
	{dir: "ingress", example: "s1-nodeport.yaml", composed: ingressKinds(1, 1, 0, 1)},
	{dir: "ingress", example: "s2-direct.yaml", composed: ingressKinds(1, 1, 0, 1)},
	{dir: "ingress", example: "s3-hostport.yaml", composed: ingressKinds(1, 1, 0, 1)},
	{dir: "ingress", example: "s4-https.yaml", composed: ingressKinds(1, 1, 1, 1)},
	{dir: "ingress", example: "s5-segments.yaml", composed: ingressKinds(1, 6, 0, 6)},
	{dir: "ingress", example: "s7-service-weights.yaml", composed: ingressKinds(1, 1, 0, 1)},
	{dir: "ingress", example: "s8-subset-weights.yaml", composed: ingressKinds(1, 1, 0, 1)},
	{dir: "ingress", example: "s9-https-per-pod.yaml", composed: ingressKinds(1, 6, 6, 6)},
	{dir: "ingress", example: "qs1-nodeport.yaml", composed: ingressKinds(1, 1, 0, 1)},
	{dir: "ingress", example: "qs2-direct.yaml", composed: ingressKinds(1, 1, 0, 1)},
	{dir: "ingress", example: "qs3-segments.yaml", composed: ingressKinds(1, 3, 0, 3)},
	{dir: "ingress", example: "cross-region.yaml", composed: ingressKinds(2, 2, 0, 2)},
	{dir: "ingress", example: "lbnames-attributes.yaml", composed: ingressKinds(2, 4, 2, 4)},
}

// ingressKinds are the kinds an Ingress composes.
func ingressKinds(lbs, listeners, rules, targetSets int) []string {
	var out []string
	for kind, n := range map[string]int{"LoadBalancer": lbs, "Listener": listeners, "Rule": rules, "TargetSet": targetSets} {
		for range n {
			out = append(out, kind)
		}
	}
	return out
}

func TestRenderExamples(t *testing.T) {
	core, cli, err := testenv.CrossplaneBinaries()
	if err != nil {
		t.Fatal(err)
	}
	target := serveFunction(t)
	dir := t.TempDir()
	functions := filepath.Join(dir, "functions.yaml")
	writeYAML(t, functions, map[string]any{
		"apiVersion": "pkg.crossplane.io/v1",
		"kind":       "Function",
		"metadata": map[string]any{
			"name": function.Name,
			"annotations": map[string]any{
				"render.crossplane.io/runtime":                    "Development",
				"render.crossplane.io/runtime-development-target": target,
			},
		},
		"spec": map[string]any{"package": "xpkg.crossplane.io/" + function.Name + ":v0.0.0"},
	})

	root := testenv.RepoRoot()
	seen := map[string]bool{}
	for _, tc := range cases {
		from := filepath.Join(root, "examples", "composition", tc.example)
		name := strings.TrimSuffix(tc.example, ".yaml")
		if tc.dir != "" {
			from = filepath.Join("testdata", tc.dir, tc.example)
			name = tc.dir + "-" + name
		} else {
			seen[tc.example] = true
		}
		if tc.observed != "" {
			name += "-observed"
		}
		t.Run(name, func(t *testing.T) {
			obj := readOne(t, from)
			xr, base := asComposite(obj)
			xrFile := filepath.Join(dir, name+"-xr.yaml")
			writeYAML(t, xrFile, xr.Object)
			pkg := filepath.Join(root, "package", "configuration")
			args := []string{"composition", "render", "--crossplane-binary=" + core,
				"--xrd=" + filepath.Join(pkg, "xrd-"+base+".yaml"), "--include-function-results"}
			if tc.observed != "" {
				args = append(args, "--observed-resources="+filepath.Join("testdata", "observed", tc.observed))
			}
			args = append(args, xrFile, filepath.Join(pkg, "composition-"+base+".yaml"), functions)

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, cli, args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("render: %v\n%s", err, stderr.String())
			}
			checkComposed(t, stdout.Bytes(), tc.composed)
			out := normalise(stdout.String())

			golden := filepath.Join("testdata", name+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, []byte(out), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), out); diff != "" {
				t.Errorf("render of %s differs from %s (-want +got):\n%s", tc.example, golden, diff)
			}
		})
	}

	// Every example is rendered.
	entries, err := os.ReadDir(filepath.Join(root, "examples", "composition"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !seen[e.Name()] {
			t.Errorf("examples/composition/%s has no render case", e.Name())
		}
	}
}

// normalise sorts the Result documents of a render: Crossplane reports
// the composed resources that are not ready yet in map order. Everything
// else keeps its order.
func normalise(out string) string {
	docs := strings.Split(strings.TrimSpace(out), "\n---\n")
	var results []string
	kept := docs[:0]
	for _, d := range docs {
		d = strings.TrimSpace(d)
		if strings.Contains(d, "\nkind: Result\n") {
			results = append(results, d)
			continue
		}
		kept = append(kept, d)
	}
	slices.Sort(results)
	return strings.Join(append(kept, results...), "\n---\n") + "\n"
}

// serveFunction serves the composition function on a loopback port without
// TLS, as render dials functions of the Development runtime, and returns
// the address.
func serveFunction(t *testing.T) string {
	t.Helper()
	f, err := function.New(logging.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	lis, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(insecure.NewCredentials()))
	fnv1.RegisterFunctionRunnerServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// asComposite returns the composite to render for an example object, and
// its kind in lower case (which names its XRD and Composition files). A
// namespaced XR is rendered as it is. A claim is turned into the legacy XR
// Crossplane's claim controller would create for it: kind X<kind>, a name
// with a suffix, the claim's spec, claimRef and claim labels.
func asComposite(obj *unstructured.Unstructured) (*unstructured.Unstructured, string) {
	gvk := obj.GroupVersionKind()
	if gvk.Group != function.GroupLegacy {
		return obj, strings.ToLower(gvk.Kind)
	}
	xr := &unstructured.Unstructured{Object: map[string]any{"spec": obj.Object["spec"]}}
	xr.SetAPIVersion(obj.GetAPIVersion())
	xr.SetKind("X" + gvk.Kind)
	xr.SetName(obj.GetName() + "-" + legacySuffix)
	// Crossplane copies the claim's annotations to its XR (the Ingress's
	// load balancers are annotations).
	xr.SetAnnotations(obj.GetAnnotations())
	xr.SetLabels(map[string]string{
		"crossplane.io/claim-name":      obj.GetName(),
		"crossplane.io/claim-namespace": obj.GetNamespace(),
	})
	_ = unstructured.SetNestedMap(xr.Object, map[string]any{
		"apiVersion": obj.GetAPIVersion(),
		"kind":       gvk.Kind,
		"name":       obj.GetName(),
		"namespace":  obj.GetNamespace(),
	}, "spec", "claimRef")
	return xr, "x" + strings.ToLower(gvk.Kind)
}

// checkComposed checks the kinds of the composed resources in the output:
// every document but the composite and the Results.
func checkComposed(t *testing.T, out []byte, want []string) {
	t.Helper()
	var got []string
	for i, o := range readAll(t, bytes.NewReader(out)) {
		if i == 0 || o.GetKind() == "Result" {
			continue
		}
		got = append(got, o.GetKind())
	}
	want = slices.Sorted(slices.Values(want))
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("composed kinds (-want +got):\n%s\n%s", diff, out)
	}
}

func readOne(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs := readAll(t, bytes.NewReader(b))
	if len(objs) != 1 {
		t.Fatalf("%s: %d objects, want one", path, len(objs))
	}
	return objs[0]
}

func readAll(t *testing.T, r *bytes.Reader) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	for {
		o := &unstructured.Unstructured{}
		if err := d.Decode(&o.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatal(err)
		}
		if len(o.Object) > 0 {
			out = append(out, o)
		}
	}
}

func writeYAML(t *testing.T, path string, obj map[string]any) {
	t.Helper()
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(fmt.Errorf("cannot write %s: %w", path, err))
	}
}
