package allocation

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// A NotAllowed is a pool that does not serve a namespace: its
// spec.consumers does not let that namespace's Pods and policies bind in
// it.
type NotAllowed struct {
	Pool      string
	Namespace string
	Rule      clbv1alpha1.NamespaceConsent
}

func (e *NotAllowed) Error() string {
	return fmt.Sprintf("PortPool %s does not serve namespace %s: its spec.consumers.namespaces is %s; its owner can allow %s there",
		e.Pool, e.Namespace, e.Rule, e.Namespace)
}

// Consents tells whether the pools that own their objects let a namespace
// use them. It reads the consumer Namespace only for a selector, from the
// cache.
type Consents struct {
	kube client.Reader
}

// NewConsents returns Consents reading from kube.
func NewConsents(kube client.Reader) *Consents { return &Consents{kube: kube} }

// Allows reports whether c lets objects of namespace ns use an object of
// namespace owner. A consumer Namespace that does not exist is allowed
// nothing beyond its own.
func (c *Consents) Allows(ctx context.Context, rule clbv1alpha1.NamespaceConsent, owner, ns string) (bool, error) {
	if ns == owner {
		return true, nil
	}
	consumer := &corev1.Namespace{}
	consumer.SetName(ns)
	if rule.NeedsLabels() {
		if err := c.kube.Get(ctx, types.NamespacedName{Name: ns}, consumer); err != nil {
			if kerrors.IsNotFound(err) {
				return false, nil
			}
			return false, errors.Wrapf(err, "cannot get Namespace %s", ns)
		}
	}
	return rule.Allows(owner, consumer), nil
}

// Check returns why pool (a PoolKey) does not serve namespace ns, or
// nil when it does. A pool that cannot be read is left to the
// allocation, which reports it.
func (c *Consents) Check(ctx context.Context, ns, pool string) (*NotAllowed, error) {
	nn, ok := v1alpha1.ParsePoolKey(pool)
	if !ok || nn.Namespace == ns {
		return nil, nil
	}
	pp, err := Read(ctx, c.kube, pool)
	if err != nil {
		return nil, nil //nolint:nilerr // the allocation reports a pool it cannot read
	}
	rule := pp.NamespaceConsent()
	ok, err = c.Allows(ctx, rule, nn.Namespace, ns)
	if err != nil || ok {
		return nil, err
	}
	return &NotAllowed{Pool: pool, Namespace: ns, Rule: rule}, nil
}
