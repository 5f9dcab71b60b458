package workloadcluster

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// AgentRules are what the agent of cluster may do in its namespace of the
// management cluster, and nothing more: write RemotePod specs (never their
// status, which is the provider's), read the addresses and policies, read
// its own WorkloadCluster, renew its own Lease, record Events and read the
// token the provider mints for it. It mints no token itself.
func AgentRules(cluster string) []rbacv1.PolicyRule {
	group := v1alpha1.SchemeGroupVersion.Group
	return []rbacv1.PolicyRule{
		{APIGroups: []string{group}, Resources: []string{"remotepods"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
		{APIGroups: []string{group}, Resources: []string{"podaddresses", "podaddresspolicies"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{group}, Resources: []string{"workloadclusters"}, ResourceNames: []string{cluster}, Verbs: []string{"get"}},
		// The provider creates the Lease: RBAC cannot limit create by name.
		{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, ResourceNames: []string{v1alpha1.AgentLease(cluster)}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{v1alpha1.AgentTokenSecret(cluster)}, Verbs: []string{"get"}},
	}
}

// BootstrapRules are all a bootstrap token may do: check its cluster and
// read the agent's first token.
func BootstrapRules(cluster string) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{v1alpha1.SchemeGroupVersion.Group}, Resources: []string{"workloadclusters"}, ResourceNames: []string{cluster}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{v1alpha1.AgentTokenSecret(cluster)}, Verbs: []string{"get"}},
	}
}

// identities are the objects the provider keeps for wc, as they should be.
func identities(wc *v1alpha1.WorkloadCluster) []client.Object {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: wc.Namespace, Name: name, Labels: map[string]string{v1alpha1.LabelWorkloadCluster: wc.Name}}
	}
	var out []client.Object
	for _, id := range []struct {
		name  string
		rules []rbacv1.PolicyRule
	}{
		{v1alpha1.AgentServiceAccount(wc.Name), AgentRules(wc.Name)},
		{v1alpha1.BootstrapServiceAccount(wc.Name), BootstrapRules(wc.Name)},
	} {
		// The ServiceAccount last: once it exists, so do its rights.
		out = append(out,
			&rbacv1.Role{ObjectMeta: meta(id.name), Rules: id.rules},
			&rbacv1.RoleBinding{
				ObjectMeta: meta(id.name),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: id.name},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: wc.Namespace, Name: id.name}},
			},
			&corev1.ServiceAccount{ObjectMeta: meta(id.name)})
	}
	// The Lease first: the agent may not create it.
	return append([]client.Object{lease(wc)}, out...)
}

func lease(wc *v1alpha1.WorkloadCluster) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: wc.Namespace, Name: v1alpha1.AgentLease(wc.Name),
		Labels: map[string]string{v1alpha1.LabelWorkloadCluster: wc.Name}}}
}

// revoke deletes what lets wc's agent act: the ServiceAccounts (their
// tokens stop working: bound tokens die with their ServiceAccount), their
// bindings and Roles, and the token Secret. The Lease stays, as the record
// of the last heartbeat. It returns how many objects it deleted.
func (r *Reconciler) revoke(ctx context.Context, wc *v1alpha1.WorkloadCluster) (int, error) {
	r.mu.Lock()
	delete(r.ensured, wc.UID)
	r.mu.Unlock()
	// The ServiceAccounts first: once they are gone, nothing they held
	// works.
	var sas, others []client.Object
	for _, o := range append(identities(wc)[1:], tokenSecret(wc)) {
		if _, ok := o.(*corev1.ServiceAccount); ok {
			sas = append(sas, o)
		} else {
			others = append(others, o)
		}
	}
	n := 0
	for _, o := range append(sas, others...) {
		err := r.kube.Delete(ctx, o)
		switch {
		case kerrors.IsNotFound(err):
		case err != nil:
			return n, errors.Wrapf(err, "cannot delete %T %s", o, o.GetName())
		default:
			n++
		}
	}
	return n, nil
}

// ensureIdentities creates the identities of wc that are missing and puts
// back the rules and subjects of those that changed. Found in place, they
// are not read again for identityRecheck.
func (r *Reconciler) ensureIdentities(ctx context.Context, wc *v1alpha1.WorkloadCluster) error {
	r.mu.Lock()
	at, ok := r.ensured[wc.UID]
	r.mu.Unlock()
	if ok && r.clock().Sub(at) < identityRecheck {
		return nil
	}
	for _, want := range identities(wc) {
		if err := controllerutil.SetControllerReference(wc, want, r.kube.Scheme()); err != nil {
			return err
		}
		if err := r.ensure(ctx, want); err != nil {
			return errors.Wrapf(err, "cannot keep %T %s", want, want.GetName())
		}
	}
	r.mu.Lock()
	r.ensured[wc.UID] = r.clock()
	r.mu.Unlock()
	return nil
}

func (r *Reconciler) ensure(ctx context.Context, want client.Object) error {
	got := want.DeepCopyObject().(client.Object) //nolint:forcetypeassert // a copy of a client.Object
	if err := r.api.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
		if !kerrors.IsNotFound(err) {
			return err
		}
		return r.kube.Create(ctx, want)
	}
	changed := false
	switch w := want.(type) {
	case *rbacv1.Role:
		g := got.(*rbacv1.Role) //nolint:forcetypeassert // same type as want
		if !equality.Semantic.DeepEqual(g.Rules, w.Rules) {
			g.Rules, changed = w.Rules, true
		}
	case *rbacv1.RoleBinding:
		g := got.(*rbacv1.RoleBinding) //nolint:forcetypeassert // same type as want
		if !equality.Semantic.DeepEqual(g.Subjects, w.Subjects) {
			g.Subjects, changed = w.Subjects, true
		}
	}
	if !changed {
		return nil
	}
	return r.kube.Update(ctx, got)
}
