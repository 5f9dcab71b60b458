package tenancy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/ippool"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// The CNI allocator API (docs/ip-pools.md#who-may-call-it): a NetPool for
// two nodes, the CNI DaemonSet's Pod on each (its Pod-bound token is the
// node's identity), an operator's tool, a live container on node 2 and a
// StatefulSet Pod of tenant-b on node 2 whose IP is Reserved for it.
const (
	IPPool = "tenancy-ips"
	Node1  = "tenancy-node-1"
	Node2  = "tenancy-node-2"
	Host1  = "10.70.255.1"
	Host2  = "10.70.255.2"
)

// ipam is what the allocator cases share, made by prepareAllocator.
var ipam struct {
	base   string
	client *http.Client
	ca     *testenv.ClientCA
	// Tokens: the CNI's on each node, the operator's tool's, the CNI's
	// ServiceAccount's bound to no Pod, and one of tenant-a's Pod on node 1.
	cni1, cni2, admin, unbound, tenantPod string
	// The Reserved IP of tenant-b's StatefulSet Pod, and node 2's live one.
	reserved, live string
}

// A caller of the allocator API: a bearer token, a client certificate.
type caller struct {
	token string
	cert  *tls.Certificate
}

// allocator makes one call; body is JSON unless nil.
func allocator(ctx context.Context, c caller, method, path string, body any) (int, ippool.Envelope, error) {
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return 0, ippool.Envelope{}, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, ipam.base+path, bytes.NewReader(raw))
	if err != nil {
		return 0, ippool.Envelope{}, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	hc := ipam.client
	if c.cert != nil {
		tr := ipam.client.Transport.(*http.Transport).Clone()
		tr.TLSClientConfig.Certificates = []tls.Certificate{*c.cert}
		defer tr.CloseIdleConnections()
		hc = &http.Client{Timeout: ipam.client.Timeout, Transport: tr}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, ippool.Envelope{}, err
	}
	defer resp.Body.Close()
	e := ippool.Envelope{}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		return resp.StatusCode, e, errors.Wrapf(err, "%s %s: %s, not an envelope", method, path, resp.Status)
	}
	return resp.StatusCode, e, nil
}

// allocatorRefusal is the refusal of one call ("<status> <code>:
// <message>"), or an error when it succeeded.
func allocatorRefusal(ctx context.Context, c caller, method, path string, body any) (string, error) {
	status, e, err := allocator(ctx, c, method, path, body)
	if err != nil {
		return "", err
	}
	if e.Code == ippool.CodeOK {
		return "", errors.Errorf("%s %s %v: answered %d %+v", method, path, body, status, e)
	}
	return fmt.Sprintf("%d %d: %s", status, e.Code, e.Message), nil
}

// allocatorOK makes a call that must succeed and returns its leases.
func allocatorOK(ctx context.Context, c caller, method, path string, body any) ([]ippool.Lease, error) {
	status, e, err := allocator(ctx, c, method, path, body)
	if err != nil {
		return nil, err
	}
	if e.Code != ippool.CodeOK {
		return nil, errors.Errorf("%s %s %v: %d %+v", method, path, body, status, e)
	}
	return e.Data, nil
}

//nolint:gochecknoinits // each area registers its cases from its file, as the suite asks
func init() {
	prepare(prepareAllocator)
	compare(func(ctx context.Context, into map[string]string) error {
		ips := &v1alpha1.NetIPList{}
		if err := kube.List(ctx, ips, client.MatchingLabels{v1alpha1.LabelNetPool: IPPool}); err != nil {
			return err
		}
		for _, ip := range ips.Items {
			s := ip.Status
			s.UpdateTime = ""
			into["NetIP "+ip.Name] = jsonOf(s)
		}
		return nil
	})
	req := func(host, container string) ippool.Request {
		return ippool.Request{Host: host, ContainerID: container}
	}
	attack(
		Attack{
			Name: "anonymous-allocates-ip", Who: Anonymous,
			What: "POST the allocator API with no credentials for node 1's host",
			Want: "401 4010: unauthenticated: no credentials",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return allocatorRefusal(ctx, caller{}, http.MethodPost, ippool.AllocatorPath, req(Host1, "anon"))
			},
		},
		Attack{
			Name: "anonymous-frees-host", Who: Anonymous,
			What: "DELETE …/host/{ip} of node 2 with no credentials (its live container's IP would be given to another)",
			Want: "401 4010: unauthenticated",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return allocatorRefusal(ctx, caller{}, http.MethodDelete, ippool.HostPath+Host2, nil)
			},
		},
		Attack{
			Name: "made-up-token", Who: Anonymous,
			What: "allocate with a bearer token the API server never issued",
			Want: "the API server refuses the token",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return allocatorRefusal(ctx, caller{token: "eyJhbGciOiJSUzI1NiJ9.e30.c2ln"}, http.MethodPost, ippool.AllocatorPath, req(Host1, "forged"))
			},
		},
		Attack{
			Name: "tenant-pod-token-allocates", Who: TenantA,
			What: "allocate for node 1's host with the token of her Pod on node 1 (her namespace's ServiceAccount)",
			Want: `may not create netpools/allocations of NetPool ` + IPPool,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return allocatorRefusal(ctx, caller{token: ipam.tenantPod}, http.MethodPost, ippool.AllocatorPath, req(Host1, "tenant"))
			},
		},
		Attack{
			Name: "node-allocates-for-other-host", Who: Node,
			What: "the CNI on node 1 allocates for node 2's host",
			Want: "speaks for node " + Node1 + " (InternalIPs: " + Host1 + "), not for host " + Host2,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return allocatorRefusal(ctx, caller{token: ipam.cni1}, http.MethodPost, ippool.AllocatorPath, req(Host2, "n1-on-2"))
			},
		},
		Attack{
			Name: "node-releases-other-container", Who: Node,
			What: "the CNI on node 1 releases node 2's live container",
			Want: "not for host " + Host2,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return allocatorRefusal(ctx, caller{token: ipam.cni1}, http.MethodDelete, ippool.AllocatorPath, req(Host2, "live"))
			},
		},
		Attack{
			Name: "node-frees-other-host", Who: Node,
			What: "the CNI on node 1 frees every IP of node 2 (DELETE …/host/{ip})",
			Want: "not for host " + Host2,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return allocatorRefusal(ctx, caller{token: ipam.cni1}, http.MethodDelete, ippool.HostPath+Host2, nil)
			},
		},
		Attack{
			Name: "node-takes-reserved-ip", Who: Node,
			What: "the CNI on node 1 takes the Reserved IP of tenant-b's StatefulSet Pod on node 2 by naming the Pod",
			Want: `pod tenant-b/db-0 is on node "` + Node2 + `"`,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return allocatorRefusal(ctx, caller{token: ipam.cni1}, http.MethodPost, ippool.AllocatorPath,
					ippool.Request{Host: Host1, ContainerID: "steal", PodName: "db-0", PodNamespace: NamespaceB})
			},
		},
		Attack{
			Name: "kubelet-cert-other-host", Who: Node,
			What: "node 1's kubelet client certificate frees node 2's host",
			Want: "not for host " + Host2,
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				cert, err := ipam.ca.Client("system:node:"+Node1, "system:nodes")
				if err != nil {
					return "", err
				}
				return allocatorRefusal(ctx, caller{cert: cert}, http.MethodDelete, ippool.HostPath+Host2, nil)
			},
		},
		Attack{
			Name: "unbound-cni-token", Who: Node,
			What: "the CNI's ServiceAccount token bound to no Pod (a leaked long-lived one) frees node 2's host",
			Want: "is not a node: it may act for host " + Host2 + " only with verb anyhost",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return allocatorRefusal(ctx, caller{token: ipam.unbound}, http.MethodDelete, ippool.HostPath+Host2, nil)
			},
		},
		Attack{
			Name: "forged-kubelet-cert", Who: Anonymous,
			What: "present a kubelet certificate for node 2 signed by a CA of her own",
			Want: "tls:",
			Try: func(ctx context.Context, t *testing.T) (string, error) {
				own, err := testenv.NewClientCA(filepath.Join(t.TempDir(), "ca.crt"))
				if err != nil {
					return "", err
				}
				cert, err := own.Client("system:node:"+Node2, "system:nodes")
				if err != nil {
					return "", err
				}
				_, e, err := allocator(ctx, caller{cert: cert}, http.MethodDelete, ippool.HostPath+Host2, nil)
				if err == nil {
					return "", errors.Errorf("the handshake succeeded and the call was answered %+v", e)
				}
				return err.Error(), nil
			},
		},
	)
	allow(
		Allowed{
			Name: "node-allocates-own-host", Who: Node,
			What: "the CNI on node 1 allocates for node 1's host and releases it",
			Try: func(ctx context.Context, _ *testing.T) error {
				l, err := allocatorOK(ctx, caller{token: ipam.cni1}, http.MethodPost, ippool.AllocatorPath, req(Host1, "own"))
				if err != nil {
					return err
				}
				if len(l) != 1 || l[0].Host != Host1 {
					return errors.Errorf("leases %+v", l)
				}
				_, err = allocatorOK(ctx, caller{token: ipam.cni1}, http.MethodDelete, ippool.AllocatorPath, req(Host1, "own"))
				return err
			},
		},
		Allowed{
			Name: "node-takes-own-pods-ip", Who: Node,
			What: "node 2's kubelet certificate gives tenant-b's StatefulSet Pod on node 2 its Reserved IP",
			Try: func(ctx context.Context, _ *testing.T) error {
				cert, err := ipam.ca.Client("system:node:"+Node2, "system:nodes")
				if err != nil {
					return err
				}
				l, err := allocatorOK(ctx, caller{cert: cert}, http.MethodPost, ippool.AllocatorPath,
					ippool.Request{Host: Host2, ContainerID: "db-2", PodName: "db-0", PodNamespace: NamespaceB})
				if err != nil {
					return err
				}
				if len(l) != 1 || l[0].IPAddr != ipam.reserved {
					return errors.Errorf("leases %+v, want %s", l, ipam.reserved)
				}
				return nil
			},
		},
		Allowed{
			Name: "operator-frees-gone-node", Who: Admin,
			What: "an operator's tool with anyhost frees every IP of node 2",
			Try: func(ctx context.Context, _ *testing.T) error {
				l, err := allocatorOK(ctx, caller{token: ipam.admin}, http.MethodDelete, ippool.HostPath+Host2, nil)
				if err != nil {
					return err
				}
				if len(l) != 2 {
					return errors.Errorf("freed %+v, want the live container's and the StatefulSet Pod's", l)
				}
				return nil
			},
		},
	)
}

// prepareAllocator serves the allocator API as the provider's
// ServiceAccount (HTTPS, tokens and a client CA), applies
// examples/network/netservice-callers.yaml, and makes the nodes, the pool,
// the CNI's Pods and the IPs the cases aim at.
func prepareAllocator(ctx context.Context, t *testing.T) {
	dir := t.TempDir()
	serving, err := testenv.ServingCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ipam.ca, err = testenv.NewClientCA(filepath.Join(dir, "client-ca.crt")); err != nil {
		t.Fatal(err)
	}
	addr, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	shared.StartProvider(t, suite.AsProvider(testenv.FeatureIPPools), suite.IPPools(ippool.ServerOptions{Address: addr, CertDir: dir, ClientCA: ipam.ca.File}, time.Hour))
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(serving)
	ipam.base = "https://" + addr
	ipam.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}

	if _, err := testenv.Apply(ctx, kube, filepath.Join(testenv.RepoRoot(), "examples", "network", "netservice-callers.yaml")); err != nil {
		t.Fatal(err)
	}
	// Kubelets use the CNI's grant, as a CNI running with their
	// credentials would.
	nodes := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "tenancy:nodes-cni"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "netservice:cni"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:nodes"}}}
	if err := kube.Create(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	for name, ip := range map[string]string{Node1: Host1, Node2: Host2} {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := kube.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
		if err := kube.Status().Update(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	pool := &v1alpha1.NetPool{ObjectMeta: metav1.ObjectMeta{Name: IPPool}, Spec: v1alpha1.NetPoolSpec{
		Net: "10.70.0.0", Mask: 16, Gateway: "10.70.0.1", Hosts: []string{Host1, Host2},
		AvailableIPs: []string{"10.70.1.1", "10.70.1.2", "10.70.1.3", "10.70.1.4"},
	}}
	if err := kube.Create(ctx, pool); err != nil {
		t.Fatal(err)
	}
	// The CNI's Pods (kube-system/netservice-cni), and a Pod tenant-a runs
	// on node 1 herself: their projected tokens.
	podOn := func(who Who, ns, name, sa, node string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{
			NodeName: node, ServiceAccountName: sa, Containers: []corev1.Container{{Name: "c", Image: "example/c"}},
		}}
		if err := Client(who).Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	token := func(ns, sa string, p *corev1.Pod) string {
		tok, err := env.Token(ctx, ns, sa, p)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	ipam.cni1 = token("kube-system", "netservice-cni", podOn(Admin, "kube-system", "netservice-cni-1", "netservice-cni", Node1))
	ipam.cni2 = token("kube-system", "netservice-cni", podOn(Admin, "kube-system", "netservice-cni-2", "netservice-cni", Node2))
	ipam.unbound = token("kube-system", "netservice-cni", nil)
	ipam.admin = token("kube-system", "netservice-admin", nil)
	ipam.tenantPod = token(NamespaceA, "default", podOn(TenantA, NamespaceA, "probe", "default", Node1))
	for who, groups := range map[string][]string{
		"system:serviceaccount:kube-system:netservice-cni":   nil,
		"system:serviceaccount:kube-system:netservice-admin": nil,
		"system:node:" + Node2:                               {"system:nodes"},
	} {
		if err := env.WaitAllowed(ctx, who, groups, authorizationv1.ResourceAttributes{Verb: v1alpha1.VerbAllocate,
			Group: v1alpha1.AllocationsGroup, Resource: v1alpha1.AllocationsResource, Subresource: v1alpha1.AllocationsSubresource}); err != nil {
			t.Fatal(err)
		}
	}

	// tenant-b's StatefulSet Pod on node 2, whose IP node 2's CNI gave and
	// released (Reserved for it), and a live container on node 2.
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceB, Name: "db"}, Spec: appsv1.StatefulSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "example/db"}}}},
	}}
	if err := kube.Create(ctx, sts); err != nil {
		t.Fatal(err)
	}
	db := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: NamespaceB, Name: "db-0", Labels: map[string]string{"app": "db"},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
		Spec: corev1.PodSpec{NodeName: Node2, Containers: []corev1.Container{{Name: "db", Image: "example/db"}}}}
	if err := kube.Create(ctx, db); err != nil {
		t.Fatal(err)
	}
	cni2 := caller{token: ipam.cni2}
	dbReq := ippool.Request{Host: Host2, ContainerID: "db-1", PodName: "db-0", PodNamespace: NamespaceB}
	var l []ippool.Lease
	eventuallyT(t, "node 2's CNI gives tenant-b's StatefulSet Pod an IP", func() error {
		l, err = allocatorOK(ctx, cni2, http.MethodPost, ippool.AllocatorPath, dbReq)
		return err
	})
	ipam.reserved = l[0].IPAddr
	if _, err := allocatorOK(ctx, cni2, http.MethodDelete, ippool.AllocatorPath, dbReq); err != nil {
		t.Fatal(err)
	}
	if l, err = allocatorOK(ctx, cni2, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: Host2, ContainerID: "live"}); err != nil {
		t.Fatal(err)
	}
	ipam.live = l[0].IPAddr
}
