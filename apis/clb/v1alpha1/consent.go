package v1alpha1

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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

// MaxBindingsPerNamespace is the pool's bound on the bindings of one
// namespace, 0 for none.
func (pp *PortPool) MaxBindingsPerNamespace() int {
	if pp.Spec.Consumers == nil || pp.Spec.Consumers.MaxBindingsPerNamespace == nil {
		return 0
	}
	return int(*pp.Spec.Consumers.MaxBindingsPerNamespace)
}
