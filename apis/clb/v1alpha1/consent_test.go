package v1alpha1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNamespaceConsentAllows(t *testing.T) {
	ns := func(name string, labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	team := &metav1.LabelSelector{MatchLabels: map[string]string{"team": "games"}}
	cases := map[string]struct {
		c        NamespaceConsent
		consumer *corev1.Namespace
		want     bool
	}{
		"default is Same: own namespace":         {NamespaceConsent{}, ns("pools", nil), true},
		"default is Same: another namespace":     {NamespaceConsent{}, ns("tenant", nil), false},
		"Same: another namespace":                {NamespaceConsent{From: ConsentSame}, ns("tenant", nil), false},
		"All: another namespace":                 {NamespaceConsent{From: ConsentAll}, ns("tenant", nil), true},
		"Selector: labels match":                 {NamespaceConsent{From: ConsentSelector, Selector: team}, ns("tenant", map[string]string{"team": "games"}), true},
		"Selector: labels differ":                {NamespaceConsent{From: ConsentSelector, Selector: team}, ns("tenant", map[string]string{"team": "web"}), false},
		"Selector: own namespace without labels": {NamespaceConsent{From: ConsentSelector, Selector: team}, ns("pools", nil), true},
		"Selector: none given":                   {NamespaceConsent{From: ConsentSelector}, ns("tenant", map[string]string{"team": "games"}), false},
		"Selector: empty selects nothing":        {NamespaceConsent{From: ConsentSelector, Selector: &metav1.LabelSelector{}}, ns("tenant", nil), false},
		"Selector: malformed":                    {NamespaceConsent{From: ConsentSelector, Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near"}}}}, ns("tenant", nil), false},
		"Selector: by name":                      {NamespaceConsent{From: ConsentSelector, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "tenant"}}}, ns("tenant", map[string]string{corev1.LabelMetadataName: "tenant"}), true},
		"unknown from":                           {NamespaceConsent{From: "Some"}, ns("tenant", nil), false},
		"no namespace":                           {NamespaceConsent{From: ConsentAll}, nil, false},
	}
	for name, tc := range cases {
		if got := tc.c.Allows("pools", tc.consumer); got != tc.want {
			t.Errorf("%s: Allows = %v, want %v", name, got, tc.want)
		}
	}
}

func TestNamespaceConsentString(t *testing.T) {
	for c, want := range map[*NamespaceConsent]string{
		{}:                 "from: Same (its own namespace only)",
		{From: ConsentAll}: "from: All",
		{From: ConsentSelector, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "games"}}}: "from: Selector, selector team=games",
	} {
		if got := c.String(); got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

func TestPortPoolConsent(t *testing.T) {
	pp := &PortPool{}
	if c := pp.NamespaceConsent(); c.From != "" || c.Allows("a", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "b"}}) {
		t.Errorf("a pool without consumers allows another namespace: %+v", c)
	}
	if n := pp.MaxBindingsPerNamespace(); n != 0 {
		t.Errorf("MaxBindingsPerNamespace = %d, want 0", n)
	}
	five := int64(5)
	pp.Spec.Consumers = &PoolConsumers{Namespaces: NamespaceConsent{From: ConsentAll}, MaxBindingsPerNamespace: &five}
	if !pp.NamespaceConsent().Allows("a", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "b"}}) || pp.MaxBindingsPerNamespace() != 5 {
		t.Errorf("consumers not read: %+v", pp.Spec.Consumers)
	}
}

func TestTargetConsumers(t *testing.T) {
	svc := func(v *string) *corev1.Service {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "lobby"}}
		if v != nil {
			s.Annotations = map[string]string{AnnotationTargetConsumers: *v}
		}
		return s
	}
	str := func(s string) *string { return &s }
	cases := map[string]struct {
		value   *string
		allowed []string
		denied  []string
		err     bool
	}{
		"no annotation":  {nil, []string{"web"}, []string{"games"}, false},
		"All":            {str("All"), []string{"web", "games", "other"}, nil, false},
		"names":          {str("games, ops"), []string{"web", "games", "ops"}, []string{"other"}, false},
		"one name":       {str("games"), []string{"games"}, []string{"ops"}, false},
		"empty":          {str(""), nil, nil, true},
		"not a name":     {str("games,Ops!"), nil, nil, true},
		"all, lowercase": {str("all"), []string{"all"}, []string{"games"}, false},
		"stray comma":    {str("games,"), nil, nil, true},
	}
	for name, tc := range cases {
		c, err := TargetConsumers(svc(tc.value))
		if (err != nil) != tc.err {
			t.Errorf("%s: err = %v, want error %v", name, err, tc.err)
			continue
		}
		for _, ns := range tc.allowed {
			if !c.Allows("web", NamedNamespace(ns)) {
				t.Errorf("%s: %s not allowed", name, ns)
			}
		}
		for _, ns := range tc.denied {
			if c.Allows("web", NamedNamespace(ns)) {
				t.Errorf("%s: %s allowed", name, ns)
			}
		}
	}
}
