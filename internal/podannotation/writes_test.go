package podannotation

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// podWritesPolicy reads the ValidatingAdmissionPolicy of
// examples/provider/pod-writes-policy.yaml.
func podWritesPolicy(t *testing.T) *admissionregistrationv1.ValidatingAdmissionPolicy {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "provider", "pod-writes-policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		if err := yaml.UnmarshalStrict([]byte(doc), p); err == nil && p.Kind == "ValidatingAdmissionPolicy" {
			return p
		}
	}
	t.Fatal("pod-writes-policy.yaml has no ValidatingAdmissionPolicy")
	return nil
}

// listLiteral parses a CEL list of single-quoted strings.
func listLiteral(t *testing.T, expr string) []string {
	t.Helper()
	expr = strings.TrimSpace(expr)
	if !regexp.MustCompile(`^\[\s*'[^']*'(\s*,\s*'[^']*')*\s*\]$`).MatchString(expr) {
		t.Fatalf("%q is not a list of string literals", expr)
	}
	var out []string
	for _, m := range regexp.MustCompile(`'([^']*)'`).FindAllStringSubmatch(expr, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestPodWritesPolicyListsWhatTheProviderWrites: the policy's lists of
// annotations and conditions are ProviderAnnotations and
// ProviderConditions, and its check of the rest of the status names every
// field of PodStatus but conditions, so a field Kubernetes adds is not
// left open.
func TestPodWritesPolicyListsWhatTheProviderWrites(t *testing.T) {
	p := podWritesPolicy(t)
	vars := map[string]string{}
	for _, v := range p.Spec.Variables {
		vars[v.Name] = v.Expression
	}
	if got := listLiteral(t, vars["ownAnnotations"]); !slices.Equal(got, ProviderAnnotations()) {
		t.Errorf("the policy's ownAnnotations are %q, ProviderAnnotations %q", got, ProviderAnnotations())
	}
	var conds []string
	for _, c := range ProviderConditions() {
		conds = append(conds, string(c))
	}
	if got := listLiteral(t, vars["ownConditions"]); !slices.Equal(got, conds) {
		t.Errorf("the policy's ownConditions are %q, ProviderConditions %q", got, conds)
	}
	for _, v := range []string{"oldNamed", "newNamed"} {
		if !strings.Contains(vars[v], "'"+AnnotationNamedAddresses+"'") {
			t.Errorf("%s does not read %s: %q", v, AnnotationNamedAddresses, vars[v])
		}
	}

	var fields []string
	st := reflect.TypeFor[corev1.PodStatus]()
	for i := range st.NumField() {
		name, _, _ := strings.Cut(st.Field(i).Tag.Get("json"), ",")
		if name != "conditions" {
			fields = append(fields, name)
		}
	}
	checked := map[string]bool{}
	for _, v := range p.Spec.Validations {
		for _, m := range regexp.MustCompile(`object\.status\.\?([a-zA-Z]+) == oldObject\.status\.\?([a-zA-Z]+)`).FindAllStringSubmatch(v.Expression, -1) {
			if m[1] != m[2] {
				t.Errorf("the policy compares status.%s with status.%s", m[1], m[2])
			}
			checked[m[1]] = true
		}
	}
	for _, f := range fields {
		if !checked[f] {
			t.Errorf("the policy does not keep status.%s as it was", f)
		}
		delete(checked, f)
	}
	for f := range checked {
		t.Errorf("the policy compares status.%s, which PodStatus does not have", f)
	}
	if len(p.Spec.MatchConditions) != 1 || !strings.Contains(p.Spec.MatchConditions[0].Expression, "'system:serviceaccount:crossplane-system:provider-tencentcloud-network'") {
		t.Errorf("the policy does not match the provider's ServiceAccount: %+v", p.Spec.MatchConditions)
	}
}
