package v1alpha1

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Values of NamespaceConsent.From.
const (
	// ConsentSame allows the owner's own namespace only.
	ConsentSame = "Same"
	// ConsentAll allows every namespace.
	ConsentAll = "All"
	// ConsentSelector allows the namespaces whose labels match selector.
	ConsentSelector = "Selector"
)

// A NamespaceConsent is what the owner of an object (a PortPool, the
// Services of a namespace) lets other namespaces use it from. The owner's
// own namespace is always allowed.
// +kubebuilder:validation:XValidation:rule="(has(self.from) && self.from == 'Selector') == has(self.selector)",message="selector is required with from: Selector, and only then"
type NamespaceConsent struct {
	// From is Same (the owner's namespace only, the default), All, or
	// Selector (the namespaces whose labels match selector).
	// +kubebuilder:validation:Enum=Same;All;Selector
	// +kubebuilder:default=Same
	// +optional
	From string `json:"from,omitempty"`

	// Selector of the allowed namespaces' labels, with from: Selector.
	// The label kubernetes.io/metadata.name selects a namespace by name.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// NeedsLabels reports whether Allows reads the consumer namespace's
// labels; otherwise its name is enough.
func (c NamespaceConsent) NeedsLabels() bool { return c.From == ConsentSelector }

// Allows reports whether an object of namespace owner may be used from
// namespace consumer. An unknown From or a selector that does not parse
// allows no other namespace.
func (c NamespaceConsent) Allows(owner string, consumer *corev1.Namespace) bool {
	if consumer == nil {
		return false
	}
	if consumer.GetName() == owner {
		return true
	}
	switch c.From {
	case ConsentAll:
		return true
	case ConsentSelector:
		if c.Selector == nil {
			return false
		}
		sel, err := metav1.LabelSelectorAsSelector(c.Selector)
		return err == nil && !sel.Empty() && sel.Matches(labels.Set(consumer.GetLabels()))
	}
	return false
}

// String is the rule as a message quotes it.
func (c NamespaceConsent) String() string {
	switch c.From {
	case ConsentAll:
		return "from: All"
	case ConsentSelector:
		if c.Selector == nil {
			return "from: Selector, without a selector"
		}
		return fmt.Sprintf("from: Selector, selector %s", metav1.FormatLabelSelector(c.Selector))
	}
	return "from: Same (its own namespace only)"
}

// NamespaceConsent is the pool's consent to other namespaces: from: Same
// when it says nothing.
func (pp *PortPool) NamespaceConsent() NamespaceConsent {
	if pp.Spec.Consumers == nil {
		return NamespaceConsent{}
	}
	return pp.Spec.Consumers.Namespaces
}

// DefaultMaxBindingsPerOtherNamespace bounds the bindings each other
// namespace may hold in a pool shared with it whose owner states no
// bound: a namespace let in must not take every port of the pool.
const DefaultMaxBindingsPerOtherNamespace = 100

// MaxBindingsPerNamespace is the pool's stated bound on the bindings of
// one namespace, 0 for none.
func (pp *PortPool) MaxBindingsPerNamespace() int {
	if pp.Spec.Consumers == nil || pp.Spec.Consumers.MaxBindingsPerNamespace == nil {
		return 0
	}
	return int(*pp.Spec.Consumers.MaxBindingsPerNamespace)
}

// AnnotationTargetConsumers on a Service or a Pod lets TargetSets of
// other namespaces follow it (spec.forProvider.source): "All", or the
// names of those namespaces separated by commas. Without it only
// TargetSets of its own namespace do.
const AnnotationTargetConsumers = "clb.tencentcloud.m.crossplane.io/target-consumers"

// TargetConsumers is what obj (a Service or a Pod) lets TargetSets of
// other namespaces do, read from its AnnotationTargetConsumers: from:
// Same without it, from: All for "All", else a selector of the named
// namespaces (by kubernetes.io/metadata.name, which the API server sets
// on every namespace).
func TargetConsumers(obj metav1.Object) (NamespaceConsent, error) {
	v, ok := obj.GetAnnotations()[AnnotationTargetConsumers]
	if !ok {
		return NamespaceConsent{From: ConsentSame}, nil
	}
	if strings.TrimSpace(v) == ConsentAll {
		return NamespaceConsent{From: ConsentAll}, nil
	}
	var names []string
	for n := range strings.SplitSeq(v, ",") {
		n = strings.TrimSpace(n)
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			return NamespaceConsent{}, fmt.Errorf("annotation %s %q: %q is not a namespace name (%s); write All or namespace names separated by commas",
				AnnotationTargetConsumers, v, n, strings.Join(errs, "; "))
		}
		names = append(names, n)
	}
	return NamespaceConsent{From: ConsentSelector, Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: names},
	}}}, nil
}

// NamedNamespace is the Namespace name as a consent by name reads it:
// its name, and the kubernetes.io/metadata.name label the API server
// gives every namespace.
func NamedNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelMetadataName: name}}}
}

// AnnotationActsFor on a PortPool of the namespace tke-port-pools names
// the one namespace the pool builds for: the provider sets it on the pool
// it makes for a GameServerSet, whose ClbIds its namespace's users write.
// Such a pool puts listeners only on load balancers that namespace may
// build on. Only the provider and admins write in tke-port-pools.
const AnnotationActsFor = "clb.tencentcloud.m.crossplane.io/acts-for-namespace"
