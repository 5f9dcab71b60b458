package function

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// The XRDs in package/configuration are written by hand; these tests keep
// them, the examples and the Go types the function decodes into in step.

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func dig(t *testing.T, m map[string]any, path ...string) map[string]any {
	t.Helper()
	for _, p := range path {
		next, ok := m[p].(map[string]any)
		if !ok {
			t.Fatalf("no %s in %v", p, path)
		}
		m = next
	}
	return m
}

// specOf returns the spec schema of an XRD.
func specOf(t *testing.T, xrd map[string]any) map[string]any {
	t.Helper()
	v := dig(t, xrd, "spec")["versions"].([]any)[0].(map[string]any)
	return dig(t, v, "schema", "openAPIV3Schema", "properties", "spec")
}

// jsonFields lists the JSON names of a struct's fields.
func jsonFields(v any) []string {
	var out []string
	rt := reflect.TypeOf(v)
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func properties(schema map[string]any) []string {
	var out []string
	for k := range schema["properties"].(map[string]any) {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

var xrdTypes = map[string]any{
	"xrd-podpublicaddress.yaml":     PodPublicAddressSpec{},
	"xrd-xpodpublicaddress.yaml":    PodPublicAddressSpec{},
	"xrd-dedicatedclbservice.yaml":  DedicatedCLBServiceSpec{},
	"xrd-xdedicatedclbservice.yaml": DedicatedCLBServiceSpec{},
	"xrd-ingress.yaml":              IngressSpec{},
	"xrd-xingress.yaml":             IngressSpec{},
}

func TestXRDSpecsMatchTheGoTypes(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(), "package", "configuration")
	for file, typ := range xrdTypes {
		spec := specOf(t, readYAML(t, filepath.Join(dir, file)))
		if diff := cmp.Diff(jsonFields(typ), properties(spec)); diff != "" {
			t.Errorf("%s: spec fields differ from %T (-go +xrd):\n%s", file, typ, diff)
		}
	}
	// A kind's v2 and legacy XRDs take the same spec.
	for _, pair := range [][2]string{{"xrd-podpublicaddress.yaml", "xrd-xpodpublicaddress.yaml"}, {"xrd-dedicatedclbservice.yaml", "xrd-xdedicatedclbservice.yaml"}, {"xrd-ingress.yaml", "xrd-xingress.yaml"}} {
		if diff := cmp.Diff(specOf(t, readYAML(t, filepath.Join(dir, pair[0]))), specOf(t, readYAML(t, filepath.Join(dir, pair[1])))); diff != "" {
			t.Errorf("%s and %s specs differ:\n%s", pair[0], pair[1], diff)
		}
	}
}

// withoutTransitionRules drops the x-kubernetes-validations that compare
// with oldSelf, and descriptions at the top: the XRDs copy the managed
// resources' schemas without immutability rules (a composite's template
// may change; the managed resource still refuses what it cannot do).
func withoutTransitionRules(v any) any {
	switch n := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, c := range n {
			if k == "x-kubernetes-validations" {
				var keep []any
				for _, r := range c.([]any) {
					if !strings.Contains(r.(map[string]any)["rule"].(string), "oldSelf") {
						keep = append(keep, r)
					}
				}
				if len(keep) > 0 {
					out[k] = keep
				}
				continue
			}
			out[k] = withoutTransitionRules(c)
		}
		return out
	case []any:
		out := make([]any, len(n))
		for i, c := range n {
			out[i] = withoutTransitionRules(c)
		}
		return out
	}
	return v
}

func TestXRDsCopyTheManagedResourceSchemas(t *testing.T) {
	root := testenv.RepoRoot()
	crdSpec := func(file string) map[string]any {
		crd := readYAML(t, filepath.Join(root, "package", "crds", file))
		v := dig(t, crd, "spec")["versions"].([]any)[0].(map[string]any)
		return dig(t, v, "schema", "openAPIV3Schema", "properties", "spec")
	}
	ppa := specOf(t, readYAML(t, filepath.Join(root, "package", "configuration", "xrd-podpublicaddress.yaml")))
	cases := map[string]struct{ xrd, crd map[string]any }{
		"loadBalancers.template": {dig(t, ppa, "properties", "loadBalancers", "properties", "template"), dig(t, crdSpec("clb.tencentcloud.m.crossplane.io_loadbalancers.yaml"), "properties", "forProvider")},
		"listener":               {dig(t, ppa, "properties", "listener"), dig(t, crdSpec("clb.tencentcloud.m.crossplane.io_portpools.yaml"), "properties", "forProvider", "properties", "listener")},
		"selector":               {dig(t, ppa, "properties", "selector"), dig(t, crdSpec("network.tencentcloud.m.crossplane.io_podaddresspolicies.yaml"), "properties", "selector")},
	}
	for name, tc := range cases {
		want := withoutTransitionRules(tc.crd).(map[string]any)
		got := withoutTransitionRules(tc.xrd).(map[string]any)
		delete(want, "description")
		delete(got, "description")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: the XRD's schema is not the managed resource's (-crd +xrd); copy the CRD's schema into the XRD:\n%s", name, diff)
		}
	}
}

func TestExamplesMatchTheGoTypes(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(), "examples", "composition")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 4 {
		t.Fatalf("%d examples, want one XR and one claim of each kind", len(entries))
	}
	for _, e := range entries {
		obj := readYAML(t, filepath.Join(dir, e.Name()))
		var into any = &PodPublicAddressSpec{}
		switch obj["kind"] {
		case KindDedicatedCLBService:
			into = &DedicatedCLBServiceSpec{}
		case KindIngress:
			into = &IngressSpec{}
		}
		b, err := json.Marshal(obj["spec"])
		if err != nil {
			t.Fatal(err)
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		if err := d.Decode(into); err != nil {
			t.Errorf("%s: %v", e.Name(), err)
		}
	}
}

// TestCompositionsMatchTheirXRDs checks each XRD's default Composition: it
// exists, composes the XRD's kind through this function, and its name fits
// in a label value (core labels its revisions with it: a longer name makes
// every revision fail to create).
func TestCompositionsMatchTheirXRDs(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(), "package", "configuration")
	for file := range xrdTypes {
		xrd := readYAML(t, filepath.Join(dir, file))
		spec := dig(t, xrd, "spec")
		comp := readYAML(t, filepath.Join(dir, strings.Replace(file, "xrd-", "composition-", 1)))
		name := dig(t, comp, "metadata")["name"].(string)
		if want := dig(t, spec, "defaultCompositionRef")["name"]; name != want {
			t.Errorf("%s: default composition %v, but the composition is %s", file, want, name)
		}
		if len(name) > 63 {
			t.Errorf("composition %s: %d characters, at most 63 fit in a label value", name, len(name))
		}
		ref := dig(t, comp, "spec", "compositeTypeRef")
		if want := spec["group"].(string) + "/v1alpha1"; ref["apiVersion"] != want || ref["kind"] != dig(t, spec, "names")["kind"] {
			t.Errorf("composition %s composes %v, want the XRD's kind", name, ref)
		}
		steps := dig(t, comp, "spec")["pipeline"].([]any)
		if len(steps) != 1 || steps[0].(map[string]any)["functionRef"].(map[string]any)["name"] != Name {
			t.Errorf("composition %s: pipeline %v, want one step calling %s", name, steps, Name)
		}
	}
}

// TestIngressXRDMatchesTheGoTypes compares the Ingress XRDs' spec and
// status schemas with the Go types at every level: the field names a bcs
// user writes are the ones the function reads, and every status field the
// function writes survives the API server's pruning.
func TestIngressXRDMatchesTheGoTypes(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(), "package", "configuration")
	for _, file := range []string{"xrd-ingress.yaml", "xrd-xingress.yaml"} {
		xrd := readYAML(t, filepath.Join(dir, file))
		v := dig(t, xrd, "spec")["versions"].([]any)[0].(map[string]any)
		props := dig(t, v, "schema", "openAPIV3Schema", "properties")
		fieldsMatch(t, file+" spec", reflect.TypeFor[IngressSpec](), props["spec"].(map[string]any))
		fieldsMatch(t, file+" status", reflect.TypeFor[IngressStatus](), props["status"].(map[string]any))
	}
}

func fieldsMatch(t *testing.T, path string, rt reflect.Type, schema map[string]any) {
	t.Helper()
	for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice {
		if rt.Kind() == reflect.Slice {
			items, ok := schema["items"].(map[string]any)
			if !ok {
				t.Errorf("%s: a list in Go, no items in the schema", path)
				return
			}
			schema = items
		}
		rt = rt.Elem()
	}
	if rt.Kind() != reflect.Struct {
		return
	}
	if diff := cmp.Diff(jsonFields(reflect.New(rt).Elem().Interface()), properties(schema)); diff != "" {
		t.Errorf("%s: fields differ from %s (-go +xrd):\n%s", path, rt, diff)
		return
	}
	for i := range rt.NumField() {
		f := rt.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fieldsMatch(t, path+"."+name, f.Type, schema["properties"].(map[string]any)[name].(map[string]any))
	}
}

// TestSeedIngressesMatchTheGoTypes decodes bcs-ingress-controller's
// Ingresses (the render tests' and the end-to-end tests' input) strictly:
// every field a bcs user writes is one the function reads.
func TestSeedIngressesMatchTheGoTypes(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "test", "render", "testdata", "ingress", "*.yaml"))
	if err != nil || len(files) < 8 {
		t.Fatalf("%d seed Ingresses (%v), want the scenarios", len(files), err)
	}
	for _, f := range files {
		obj := readYAML(t, f)
		b, err := json.Marshal(obj["spec"])
		if err != nil {
			t.Fatal(err)
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.DisallowUnknownFields()
		if err := d.Decode(&IngressSpec{}); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
}
