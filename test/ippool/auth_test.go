package ippool

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/ippool"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// clientCert is a client certificate of clientCA for user cn in groups.
func clientCert(t *testing.T, ca *testenv.ClientCA, cn string, orgs ...string) *tls.Certificate {
	t.Helper()
	c, err := ca.Client(cn, orgs...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// node creates a Node with one InternalIP.
func node(t *testing.T, name, ip string) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := kube.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), n) })
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: name}}
	if err := kube.Status().Update(ctx, n); err != nil {
		t.Fatal(err)
	}
}

// schedule binds a Pod to a node, as the scheduler does.
func schedule(t *testing.T, p *corev1.Pod, node string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := kube.SubResource("binding").Create(ctx, p, b); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// cniOn runs the CNI DaemonSet's Pod on node (kube-system/netservice-cni
// of examples/network/netservice-callers.yaml) and returns its projected
// token, bound to the Pod.
func cniOn(t *testing.T, node string) credentials {
	t.Helper()
	ctx := context.Background()
	p := pod("kube-system", "netservice-cni-"+node, nil)
	p.Spec.ServiceAccountName = "netservice-cni"
	if err := kube.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), p) })
	schedule(t, p, node)
	token, err := env.Token(ctx, "kube-system", "netservice-cni", p)
	if err != nil {
		t.Fatal(err)
	}
	return credentials{token: token}
}

// refused fails the test unless the call is answered status and code
// with a message that says want.
func refused(t *testing.T, c credentials, base, method, path string, body any, status, code int, want string) {
	t.Helper()
	got, e, err := callAs(c, base, method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	if got != status || e.Code != code || e.Result || !strings.Contains(e.Message, want) {
		t.Errorf("%s %s %+v: %d %+v, want %d code %d with %q", method, path, body, got, e, status, code, want)
	}
}

// TestUnauthenticatedRefused: a caller without credentials, with a token
// the API server does not know, or with a client certificate no CA of
// --netservice-client-ca signed is refused and changes nothing.
func TestUnauthenticatedRefused(t *testing.T) {
	base := startProvider(t, time.Hour)
	host := "10.43.255.1"
	newPool(t, "unauthenticated", 43, 2, host)
	held := allocate(t, base, ippool.Request{Host: host, ContainerID: "held"})
	req := ippool.Request{Host: host, ContainerID: "c"}
	for name, c := range map[string]credentials{"anonymous": {}, "bad token": {token: "not-a-token"}} {
		t.Run(name, func(t *testing.T) {
			refused(t, c, base, http.MethodPost, ippool.AllocatorPath, req, 401, ippool.CodeUnauthenticated, "")
			refused(t, c, base, http.MethodDelete, ippool.AllocatorPath, ippool.Request{Host: host, ContainerID: "held"}, 401, ippool.CodeUnauthenticated, "")
			refused(t, c, base, http.MethodDelete, ippool.HostPath+host, nil, 401, ippool.CodeUnauthenticated, "")
		})
	}
	refused(t, credentials{}, base, http.MethodPost, ippool.AllocatorPath, req, 401, ippool.CodeUnauthenticated, "no credentials")
	refused(t, credentials{token: "not-a-token"}, base, http.MethodPost, ippool.AllocatorPath, req, 401, ippool.CodeUnauthenticated, "the API server refuses the token")

	stranger, err := testenv.NewClientCA(t.TempDir() + "/stranger.crt")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := callAs(credentials{cert: clientCert(t, stranger, "system:node:n", "system:nodes")}, base, http.MethodPost, ippool.AllocatorPath, req); err == nil {
		t.Error("a client certificate of an unknown CA: the TLS handshake succeeded")
	}
	if s := netIP(t, held.IPAddr).Status; s.Status != v1alpha1.NetIPActive || s.ContainerID != "held" {
		t.Errorf("the held IP after refused calls: %+v", s)
	}
	waitCounts(t, "unauthenticated", 2, 1, 1, 0)
}

// TestServiceAccountWithoutGrant: a ServiceAccount the API server knows
// but RBAC grants nothing on netpools/allocations is refused with what
// it lacks; one that may create but is not a node may not act for a host
// without anyhost.
func TestServiceAccountWithoutGrant(t *testing.T) {
	base := startProvider(t, time.Hour)
	host := "10.44.255.1"
	newPool(t, "ungranted", 44, 2, host)
	ctx := context.Background()
	token, err := env.Token(ctx, "ippool-auth", "nobody", nil)
	if err != nil {
		t.Fatal(err)
	}
	nobody := credentials{token: token}
	refused(t, nobody, base, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: host, ContainerID: "c"}, 403, ippool.CodeForbidden,
		`user "system:serviceaccount:ippool-auth:nobody" may not create netpools/allocations of NetPool ungranted`)
	held := allocate(t, base, ippool.Request{Host: host, ContainerID: "held"})
	refused(t, nobody, base, http.MethodDelete, ippool.AllocatorPath, ippool.Request{Host: host, ContainerID: "held"}, 403, ippool.CodeForbidden, "may not delete")
	refused(t, nobody, base, http.MethodDelete, ippool.HostPath+host, nil, 403, ippool.CodeForbidden, "may not delete")

	// Granted create and delete, as the CNI is, but with a token bound to
	// no Pod: it speaks for no node.
	token, err = env.Token(ctx, "kube-system", "netservice-cni", nil)
	if err != nil {
		t.Fatal(err)
	}
	unbound := credentials{token: token}
	refused(t, unbound, base, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: host, ContainerID: "c"}, 403, ippool.CodeForbidden, "is not a node: it may act for host 10.44.255.1 only with verb anyhost")
	refused(t, unbound, base, http.MethodDelete, ippool.HostPath+host, nil, 403, ippool.CodeForbidden, "is not a node")
	if s := netIP(t, held.IPAddr).Status; s.Status != v1alpha1.NetIPActive || s.ContainerID != "held" {
		t.Errorf("the held IP after refused releases: %+v", s)
	}
	waitCounts(t, "ungranted", 2, 1, 1, 0)
}

// TestNodeBound: the CNI's token bound to a Pod on node a acts for a's
// InternalIP and a's Pods only: it allocates and releases there, but not
// for node b's host (allocate, release, release of the host), and it
// cannot take the fixed IP of a StatefulSet Pod on b by naming it. Node
// b's own identity (a kubelet client certificate) takes that IP.
func TestNodeBound(t *testing.T) {
	base := startProvider(t, time.Hour)
	hostA, hostB := "10.45.255.1", "10.45.255.2"
	newPool(t, "nodes", 45, 4, hostA, hostB)
	node(t, "ippool-a", hostA)
	node(t, "ippool-b", hostB)
	cniA := cniOn(t, "ippool-a")
	// Kubelets may use the API as the CNI does (with the CNI's grant).
	ctx := context.Background()
	nodes := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ippool-test:nodes"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "netservice:cni"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:nodes"}}}
	if err := kube.Create(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), nodes) })
	if err := env.WaitAllowed(ctx, "system:node:ippool-b", []string{"system:nodes"}, allocations(v1alpha1.VerbAllocate)); err != nil {
		t.Fatal(err)
	}

	l := allocate(t, base, ippool.Request{Host: hostB, ContainerID: "b1"}) // by the admin
	got, e, err := callAs(cniA, base, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: hostA, ContainerID: "a1"})
	if err != nil || got != 200 || e.Code != ippool.CodeOK || len(e.Data) != 1 || e.Data[0].Host != hostA {
		t.Fatalf("node a allocating for its own host: %d %+v %v", got, e, err)
	}
	refused(t, cniA, base, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: hostB, ContainerID: "a2"}, 403, ippool.CodeForbidden,
		`speaks for node ippool-a (InternalIPs: 10.45.255.1), not for host 10.45.255.2`)
	refused(t, cniA, base, http.MethodDelete, ippool.AllocatorPath, ippool.Request{Host: hostB, ContainerID: "b1"}, 403, ippool.CodeForbidden, "not for host 10.45.255.2")
	refused(t, cniA, base, http.MethodDelete, ippool.HostPath+hostB, nil, 403, ippool.CodeForbidden, "not for host 10.45.255.2")
	if s := netIP(t, l.IPAddr).Status; s.Status != v1alpha1.NetIPActive || s.ContainerID != "b1" {
		t.Errorf("node b's IP after node a's refused releases: %+v", s)
	}

	// A StatefulSet Pod on b whose IP is Reserved for it.
	namespace(t, "ippool-nodes")
	sts := schedule(t, statefulSetPod(t, "ippool-nodes", "db", nil), "ippool-b")
	kubeletB := credentials{cert: clientCert(t, clientCA, "system:node:ippool-b", "system:nodes")}
	fixedReq := ippool.Request{Host: hostB, ContainerID: "db1", PodName: sts.Name, PodNamespace: sts.Namespace}
	fixed := allocate(t, base, fixedReq)
	release(t, base, fixedReq)
	if s := netIP(t, fixed.IPAddr).Status; s.Status != v1alpha1.NetIPReserved {
		t.Fatalf("the StatefulSet Pod's IP after release: %+v", s)
	}
	refused(t, cniA, base, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: hostA, ContainerID: "steal", PodName: sts.Name, PodNamespace: sts.Namespace}, 403, ippool.CodeForbidden,
		`pod ippool-nodes/db-0 is on node "ippool-b"`)
	if s := netIP(t, fixed.IPAddr).Status; s.Status != v1alpha1.NetIPReserved || s.PodPrimaryKey != "ippool-nodes/db-0" {
		t.Errorf("the Reserved IP after node a named its Pod: %+v", s)
	}
	got, e, err = callAs(kubeletB, base, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: hostB, ContainerID: "db2", PodName: sts.Name, PodNamespace: sts.Namespace})
	if err != nil || e.Code != ippool.CodeOK || len(e.Data) != 1 || e.Data[0].IPAddr != fixed.IPAddr {
		t.Fatalf("node b taking its Pod's fixed IP with its client certificate: %d %+v %v", got, e, err)
	}
	// Each node releases its own host.
	if _, e, err := callAs(kubeletB, base, http.MethodDelete, ippool.HostPath+hostB, nil); err != nil || e.Code != ippool.CodeOK || len(e.Data) != 2 {
		t.Errorf("node b releasing its host: %+v %v", e, err)
	}
	if _, e, err := callAs(cniA, base, http.MethodDelete, ippool.AllocatorPath, ippool.Request{Host: hostA, ContainerID: "a1"}); err != nil || e.Code != ippool.CodeOK || len(e.Data) != 1 {
		t.Errorf("node a releasing its container: %+v %v", e, err)
	}
	waitCounts(t, "nodes", 4, 3, 0, 1)
}

// TestGrantByPool: a Role limited to one pool (resourceNames) lets its
// holder allocate only from that pool, though the host is in two; an IP
// of the other asked by name is refused as such.
func TestGrantByPool(t *testing.T) {
	base := startProvider(t, time.Hour)
	host := "10.46.255.1"
	newPool(t, "granted", 46, 1, host)
	other := newPool(t, "not-granted", 47, 2, host)
	ctx := context.Background()
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ippool-test:one-pool"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{v1alpha1.AllocationsGroup}, Resources: []string{v1alpha1.AllocationsResource + "/" + v1alpha1.AllocationsSubresource},
		Verbs: []string{v1alpha1.VerbAllocate, v1alpha1.VerbRelease, v1alpha1.VerbAnyHost}, ResourceNames: []string{"granted"},
	}}}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: cr.Name}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cr.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "ippool-auth", Name: "one-pool"}}}
	for _, o := range []client.Object{cr, crb} {
		if err := kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kube.Delete(context.Background(), o) })
	}
	token, err := env.Token(ctx, "ippool-auth", "one-pool", nil)
	if err != nil {
		t.Fatal(err)
	}
	onePool := credentials{token: token}
	var l ippool.Lease
	if err := testenv.Eventually(ctx, time.Minute, func() error { // the authorizer follows the binding a moment later
		_, e, err := callAs(onePool, base, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: host, ContainerID: "c1"})
		if err != nil {
			return err
		}
		if e.Code != ippool.CodeOK {
			return fmt.Errorf("%+v", e)
		}
		l = e.Data[0]
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if l.Pool != "granted" {
		t.Errorf("allocated %+v, want from pool granted", l)
	}
	refused(t, onePool, base, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: host, ContainerID: "c2"}, 409, ippool.CodeNoIPLeft, "(granted)")
	refused(t, onePool, base, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: host, ContainerID: "c3", IPAddr: other.Spec.AvailableIPs[0]}, 403, ippool.CodeForbidden,
		"may not create netpools/allocations of NetPool not-granted")
	waitCounts(t, "not-granted", 2, 2, 0, 0)
}

// TestInsecureOnLoopback: with --netservice-insecure on a loopback
// address the API is plain HTTP that needs no credentials (the seed's
// client as it was).
func TestInsecureOnLoopback(t *testing.T) {
	addr, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	serving(t) // the test's HTTP client
	shared.StartProvider(t, suite.IPPools(ippool.ServerOptions{Address: addr, Insecure: true}, time.Hour))
	base := "http://" + addr
	waitServing(t, base)
	host := "10.48.255.1"
	newPool(t, "insecure", 48, 1, host)
	if _, e, err := callAs(credentials{}, base, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: host, ContainerID: "c"}); err != nil || e.Code != ippool.CodeOK || len(e.Data) != 1 {
		t.Fatalf("allocating without credentials: %+v %v", e, err)
	}
	if _, e, err := callAs(credentials{}, base, http.MethodDelete, ippool.HostPath+host, nil); err != nil || e.Code != ippool.CodeOK || len(e.Data) != 1 {
		t.Errorf("releasing the host without credentials: %+v %v", e, err)
	}
}
