package ippool

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/ippool"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestSeedExample applies examples/network/netpool.yaml (the seed's
// BCSNetPool with its placeholders filled in), checks the NetIPs the
// controller makes, and runs the seed's three calls with the seed's
// bodies.
func TestSeedExample(t *testing.T) {
	base := startProvider(t, time.Hour)
	ctx := context.Background()
	if _, err := testenv.Apply(ctx, kube, examplePath("netpool.yaml")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePool(t, "10.20.30.0") })
	waitCounts(t, "10.20.30.0", 3, 3, 0, 0)
	for _, name := range []string{"10.20.30.20", "10.20.30.21", "10.20.30.22"} {
		ip := netIP(t, name)
		if ip.Spec != (v1alpha1.NetIPSpec{Pool: "10.20.30.0", Mask: 24, Gateway: "10.20.30.1"}) || ip.Status.Status != v1alpha1.NetIPAvailable {
			t.Errorf("NetIP %s: spec %+v status %+v", name, ip.Spec, ip.Status)
		}
	}

	// The seed's allocate body, asking for 10.xx.xx.21.
	status, e, err := call(base, http.MethodPost, ippool.AllocatorPath,
		`{"host":"10.20.0.11","containerID":"c-seed","ipAddr":"10.20.30.21","podName":"p","podNamespace":"default"}`)
	if err != nil || status != http.StatusOK || e.Code != 0 || !e.Result || e.RequestID == "" || len(e.Data) != 1 {
		t.Fatalf("allocate: %d %+v %v", status, e, err)
	}
	if l := e.Data[0]; l.IPAddr != "10.20.30.21" || l.Mask != 24 || l.Gateway != "10.20.30.1" || l.Pool != "10.20.30.0" {
		t.Errorf("lease %+v", l)
	}
	ip := netIP(t, "10.20.30.21")
	want := v1alpha1.NetIPStatus{Status: v1alpha1.NetIPActive, Host: "10.20.0.11", ContainerID: "c-seed", PodName: "p", PodNamespace: "default", PodPrimaryKey: "default/p", UpdateTime: ip.Status.UpdateTime}
	if ip.Status != want {
		t.Errorf("NetIP status %+v, want %+v", ip.Status, want)
	}
	waitCounts(t, "10.20.30.0", 3, 2, 1, 0)

	// A retried ADD gets the same IP, not a second one.
	if l := allocate(t, base, ippool.Request{Host: "10.20.0.11", ContainerID: "c-seed", PodName: "p", PodNamespace: "default"}); l.IPAddr != "10.20.30.21" {
		t.Errorf("retried allocate got %s, want 10.20.30.21", l.IPAddr)
	}
	// The seed's release body.
	if got := release(t, base, ippool.Request{Host: "10.20.0.11", ContainerID: "c-seed", PodName: "p", PodNamespace: "default"}); len(got) != 1 || got[0].IPAddr != "10.20.30.21" {
		t.Errorf("release returned %+v", got)
	}
	if s := netIP(t, "10.20.30.21").Status; s.Status != v1alpha1.NetIPAvailable || s.ContainerID != "" || s.Host != "" {
		t.Errorf("released NetIP status %+v", s)
	}
	// A retried DEL succeeds and frees nothing.
	if got := release(t, base, ippool.Request{Host: "10.20.0.11", ContainerID: "c-seed"}); len(got) != 0 {
		t.Errorf("second release returned %+v", got)
	}

	// Release a host: both of its containers' IPs, not the other host's.
	a := allocate(t, base, ippool.Request{Host: "10.20.0.12", ContainerID: "c1"})
	b := allocate(t, base, ippool.Request{Host: "10.20.0.12", ContainerID: "c2"})
	c := allocate(t, base, ippool.Request{Host: "10.20.0.11", ContainerID: "c3"})
	_, e, err = call(base, http.MethodDelete, ippool.HostPath+"10.20.0.12", nil)
	if err != nil || e.Code != 0 || len(e.Data) != 2 {
		t.Fatalf("release host: %+v %v", e, err)
	}
	for _, l := range []ippool.Lease{a, b} {
		if s := netIP(t, l.IPAddr).Status.Status; s != v1alpha1.NetIPAvailable {
			t.Errorf("%s is %s after its host was released", l.IPAddr, s)
		}
	}
	if s := netIP(t, c.IPAddr).Status; s.Status != v1alpha1.NetIPActive || s.ContainerID != "c3" {
		t.Errorf("the other host's IP %s: %+v", c.IPAddr, s)
	}
	release(t, base, ippool.Request{Host: "10.20.0.11", ContainerID: "c3"})
}

// TestValidation: the API server refuses bad pools at apply.
func TestValidation(t *testing.T) {
	ctx := context.Background()
	good := func() *v1alpha1.NetPool {
		return &v1alpha1.NetPool{ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-"}, Spec: v1alpha1.NetPoolSpec{
			Net: "10.9.0.0", Mask: 24, Gateway: "10.9.0.1", Hosts: []string{"10.9.1.1"}, AvailableIPs: []string{"10.9.0.5", "10.9.0.6"}}}
	}
	cases := map[string]struct {
		change func(*v1alpha1.NetPool)
		want   string
	}{
		"mask too long":           {func(p *v1alpha1.NetPool) { p.Spec.Mask = 33 }, "spec.mask"},
		"mask zero":               {func(p *v1alpha1.NetPool) { p.Spec.Mask = 0 }, "spec.mask"},
		"host bits below mask":    {func(p *v1alpha1.NetPool) { p.Spec.Net = "10.9.0.4" }, "net must be the first address of its subnet"},
		"net not IPv4":            {func(p *v1alpha1.NetPool) { p.Spec.Net = "fd00::" }, "net must be an IPv4 address"},
		"gateway outside net":     {func(p *v1alpha1.NetPool) { p.Spec.Gateway = "10.9.1.1" }, "gateway must be inside net/mask"},
		"IP outside net":          {func(p *v1alpha1.NetPool) { p.Spec.AvailableIPs = append(p.Spec.AvailableIPs, "10.9.3.7") }, "every availableIP must be inside net/mask"},
		"IP not an IP":            {func(p *v1alpha1.NetPool) { p.Spec.AvailableIPs = []string{"10.9.0.x"} }, "every availableIP must be an IPv4 address"},
		"duplicate IPs":           {func(p *v1alpha1.NetPool) { p.Spec.AvailableIPs = []string{"10.9.0.5", "10.9.0.5"} }, "Duplicate value"},
		"duplicate hosts":         {func(p *v1alpha1.NetPool) { p.Spec.Hosts = []string{"10.9.1.1", "10.9.1.1"} }, "Duplicate value"},
		"host not an IP":          {func(p *v1alpha1.NetPool) { p.Spec.Hosts = []string{"node-1"} }, "every host must be an IP address"},
		"gateway an available IP": {func(p *v1alpha1.NetPool) { p.Spec.AvailableIPs = []string{"10.9.0.1"} }, "the gateway cannot be an availableIP"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := good()
			tc.change(p)
			err := kube.Create(ctx, p)
			if err == nil {
				_ = kube.Delete(ctx, p)
				t.Fatalf("created a pool with %s", name)
			}
			if !kerrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want Invalid with %q", err, tc.want)
			}
		})
	}
	t.Run("net is immutable", func(t *testing.T) {
		p := good()
		if err := kube.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = kube.Delete(ctx, p) })
		p.Spec.Net, p.Spec.Gateway, p.Spec.AvailableIPs = "10.8.0.0", "10.8.0.1", nil
		if err := kube.Update(ctx, p); !kerrors.IsInvalid(err) || !strings.Contains(err.Error(), "net is immutable") {
			t.Errorf("update of net: %v", err)
		}
	})
}

// TestAPIErrors: every refusal is an envelope with its own code, a
// message, result false and a request ID, and never a 500.
func TestAPIErrors(t *testing.T) {
	base := startProvider(t, time.Hour)
	newPool(t, "errors", 31, 2, "10.31.255.1")
	newPool(t, "errors-one", 32, 1, "10.32.255.1")
	newPool(t, "errors-other", 33, 1, "10.33.255.1")
	host := "10.31.255.1"
	taken := allocate(t, base, ippool.Request{Host: host, ContainerID: "holder"})
	allocate(t, base, ippool.Request{Host: "10.32.255.1", ContainerID: "only"})
	namespace(t, "ippool-errors")
	if err := kube.Create(context.Background(), pod("ippool-errors", "claimless", map[string]string{v1alpha1.AnnotationIPClaim: "missing"})); err != nil {
		t.Fatal(err)
	}
	statefulSetPod(t, "ippool-errors", "badkeep", map[string]string{v1alpha1.AnnotationFixedIPKeep: "soon"})
	statefulSetPod(t, "ippool-errors", "negkeep", map[string]string{v1alpha1.AnnotationFixedIPKeep: "-5m"})

	cases := map[string]struct {
		method, path string
		body         any
		status, code int
		message      string
	}{
		"malformed body":            {http.MethodPost, ippool.AllocatorPath, `{"host":`, 400, ippool.CodeMalformed, "not a JSON request"},
		"body of the wrong type":    {http.MethodPost, ippool.AllocatorPath, `["10.31.255.1"]`, 400, ippool.CodeMalformed, "not a JSON request"},
		"no host":                   {http.MethodPost, ippool.AllocatorPath, ippool.Request{ContainerID: "c"}, 400, ippool.CodeMalformed, "host and containerID are required"},
		"no container ID":           {http.MethodDelete, ippool.AllocatorPath, ippool.Request{Host: host}, 400, ippool.CodeMalformed, "host and containerID are required"},
		"host not an IP":            {http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: "node-1", ContainerID: "c"}, 400, ippool.CodeMalformed, `host "node-1" is not an IP address`},
		"ipAddr not an IP":          {http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: host, ContainerID: "c", IPAddr: "ten"}, 400, ippool.CodeMalformed, `ipAddr "ten" is not an IP address`},
		"unknown host":              {http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: "10.99.0.1", ContainerID: "c"}, 404, ippool.CodeUnknownHost, "host 10.99.0.1 is in no NetPool"},
		"IP in no pool":             {http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: host, ContainerID: "c", IPAddr: "10.31.9.9"}, 404, ippool.CodeIPNotInPool, "IP 10.31.9.9 is in no NetPool of host"},
		"IP of another host's pool": {http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: host, ContainerID: "c", IPAddr: "10.33.1.1"}, 404, ippool.CodeIPNotInPool, "IP 10.33.1.1 is in no NetPool of host"},
		"IP taken":                  {http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: host, ContainerID: "c", IPAddr: taken.IPAddr}, 409, ippool.CodeIPTaken, "IP " + taken.IPAddr + " is Active"},
		"no IP left":                {http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: "10.32.255.1", ContainerID: "c"}, 409, ippool.CodeNoIPLeft, "no IP left in the NetPools of host 10.32.255.1 (errors-one)"},
		"claim not found":           {http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: host, ContainerID: "c", PodName: "claimless", PodNamespace: "ippool-errors"}, 404, ippool.CodeClaimNotFound, "names NetIPClaim missing, which does not exist"},
		"fixed-ip-keep not a duration": {http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: host, ContainerID: "c", PodName: "badkeep-0", PodNamespace: "ippool-errors"}, 400, ippool.CodeMalformed,
			`pod ippool-errors/badkeep-0: annotation ` + v1alpha1.AnnotationFixedIPKeep + `="soon" is not a duration`},
		"fixed-ip-keep negative": {http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: host, ContainerID: "c", PodName: "negkeep-0", PodNamespace: "ippool-errors"}, 400, ippool.CodeMalformed,
			`annotation ` + v1alpha1.AnnotationFixedIPKeep + `="-5m" is not a duration of 0 or more`},
		"GET allocator":          {http.MethodGet, ippool.AllocatorPath, nil, 405, ippool.CodeMethodNotAllowed, "use POST to allocate or DELETE to release"},
		"PUT allocator":          {http.MethodPut, ippool.AllocatorPath, ippool.Request{Host: host, ContainerID: "c"}, 405, ippool.CodeMethodNotAllowed, "use POST to allocate or DELETE to release"},
		"POST host":              {http.MethodPost, ippool.HostPath + host, nil, 405, ippool.CodeMethodNotAllowed, "use DELETE to release a host's IPs"},
		"release unknown host":   {http.MethodDelete, ippool.HostPath + "10.99.0.1", nil, 404, ippool.CodeUnknownHost, "host 10.99.0.1 is in no NetPool and holds no IP"},
		"release host not an IP": {http.MethodDelete, ippool.HostPath + "node-1", nil, 400, ippool.CodeMalformed, `host "node-1" is not an IP address`},
		"unknown path":           {http.MethodPost, "/netservicecontroller/v2/allocator", nil, 404, ippool.CodeNotFound, "no such path"},
		"path under host":        {http.MethodDelete, ippool.HostPath + host + "/x", nil, 404, ippool.CodeNotFound, "no such path"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			status, e, err := call(base, tc.method, tc.path, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if status != tc.status || e.Code != tc.code || e.Result || e.RequestID == "" || !strings.Contains(e.Message, tc.message) || e.Data == nil || len(e.Data) != 0 {
				t.Errorf("got %d %+v, want %d code %d with %q", status, e, tc.status, tc.code, tc.message)
			}
		})
	}
	// Nothing above changed an IP.
	if s := netIP(t, taken.IPAddr).Status; s.ContainerID != "holder" {
		t.Errorf("the taken IP is now %+v", s)
	}
	waitCounts(t, "errors", 2, 1, 1, 0)
}

// TestPoolUpdate: IPs and hosts added are served; an IP removed while
// Active stays until released, one removed while Available goes at once.
func TestPoolUpdate(t *testing.T) {
	base := startProvider(t, time.Hour)
	ctx := context.Background()
	p := newPool(t, "update", 34, 3, "10.34.255.1")
	held := allocate(t, base, ippool.Request{Host: "10.34.255.1", ContainerID: "keep", IPAddr: "10.34.1.1"})

	// A new host and a new IP.
	if _, e, _ := call(base, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: "10.34.255.2", ContainerID: "new"}); e.Code != ippool.CodeUnknownHost {
		t.Fatalf("the new host before it is added: %+v", e)
	}
	update(t, p.Name, func(p *v1alpha1.NetPool) {
		p.Spec.Hosts = append(p.Spec.Hosts, "10.34.255.2")
		p.Spec.AvailableIPs = append(p.Spec.AvailableIPs, "10.34.1.9")
	})
	waitCounts(t, p.Name, 4, 3, 1, 0)
	if ip := netIP(t, "10.34.1.9"); ip.Spec.Pool != p.Name || ip.Status.Status != v1alpha1.NetIPAvailable {
		t.Errorf("added NetIP: %+v", ip)
	}
	release(t, base, ippool.Request{Host: "10.34.255.2", ContainerID: "new"}) // nothing held yet: succeeds
	l := allocate(t, base, ippool.Request{Host: "10.34.255.2", ContainerID: "new", IPAddr: "10.34.1.9"})
	if l.Host != "10.34.255.2" {
		t.Errorf("lease %+v", l)
	}

	// Remove the held IP and a free one.
	update(t, p.Name, func(p *v1alpha1.NetPool) {
		p.Spec.AvailableIPs = slices.DeleteFunc(p.Spec.AvailableIPs, func(s string) bool { return s == held.IPAddr || s == "10.34.1.2" })
	})
	waitCounts(t, p.Name, 3, 1, 2, 0)
	ips := poolIPs(t, p.Name)
	if _, ok := ips["10.34.1.2"]; ok {
		t.Error("the removed Available IP 10.34.1.2 still has its NetIP")
	}
	if ip, ok := ips[held.IPAddr]; !ok || ip.Status.ContainerID != "keep" {
		t.Errorf("the removed Active IP: %+v (present %v)", ip.Status, ok)
	}
	// A removed IP is never given again, even by name.
	if _, e, _ := call(base, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: "10.34.255.1", ContainerID: "x", IPAddr: "10.34.1.2"}); e.Code != ippool.CodeIPNotInPool {
		t.Errorf("asking for a removed IP: %+v", e)
	}
	release(t, base, ippool.Request{Host: "10.34.255.1", ContainerID: "keep"})
	waitCounts(t, p.Name, 2, 1, 1, 0)
	if err := kube.Get(ctx, types.NamespacedName{Name: held.IPAddr}, &v1alpha1.NetIP{}); !kerrors.IsNotFound(err) {
		t.Errorf("the removed IP's NetIP after release: %v", err)
	}
}

// TestPoolDeletionRefused: a pool with Active IPs stays, saying which,
// until they are released; then it goes with its NetIPs.
func TestPoolDeletionRefused(t *testing.T) {
	base := startProvider(t, time.Hour)
	ctx := context.Background()
	p := newPool(t, "deletion", 35, 3, "10.35.255.1")
	a := allocate(t, base, ippool.Request{Host: "10.35.255.1", ContainerID: "a"})
	b := allocate(t, base, ippool.Request{Host: "10.35.255.1", ContainerID: "b"})
	if err := kube.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	want := []string{a.IPAddr, b.IPAddr}
	slices.Sort(want)
	if err := testenv.Eventually(ctx, time.Minute, func() error {
		if err := kube.Get(ctx, types.NamespacedName{Name: p.Name}, p); err != nil {
			return err
		}
		c := p.Status.GetCondition(xpv2.TypeReady)
		msg := fmt.Sprintf("cannot delete the pool while 2 IPs are Active: %s", strings.Join(want, ", "))
		if p.Status.Status != v1alpha1.NetPoolTerminating || c.Reason != v1alpha1.ReasonDeletionBlocked || c.Message != msg {
			return fmt.Errorf("status %s, condition %+v", p.Status.Status, c)
		}
		if p.Status.Total != 3 || p.Status.Active != 2 || p.Status.Available != 1 {
			return fmt.Errorf("counts while the deletion waits: %+v", p.Status)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// A deleting pool gives no more IPs.
	if _, e, _ := call(base, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: "10.35.255.1", ContainerID: "c"}); e.Code != ippool.CodeUnknownHost {
		t.Errorf("allocate from a deleting pool: %+v", e)
	}
	if n := len(poolIPs(t, p.Name)); n != 3 {
		t.Errorf("%d NetIPs while the deletion waits, want 3", n)
	}
	release(t, base, ippool.Request{Host: "10.35.255.1", ContainerID: "a"})
	// Still waiting, for one IP now, and counting it.
	if err := testenv.Eventually(ctx, time.Minute, func() error {
		if err := kube.Get(ctx, types.NamespacedName{Name: p.Name}, p); err != nil {
			return fmt.Errorf("the pool went with %s still Active: %w", b.IPAddr, err)
		}
		c := p.Status.GetCondition(xpv2.TypeReady)
		if p.Status.Active != 1 || p.Status.Available != 2 || c.Message != "cannot delete the pool while 1 IP is Active: "+b.IPAddr {
			return fmt.Errorf("status %+v", p.Status)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	release(t, base, ippool.Request{Host: "10.35.255.1", ContainerID: "b"})
	if err := testenv.Eventually(ctx, time.Minute, func() error {
		if err := kube.Get(ctx, types.NamespacedName{Name: p.Name}, p); !kerrors.IsNotFound(err) {
			return fmt.Errorf("pool still there: %w", err)
		}
		if n := len(poolIPs(t, p.Name)); n != 0 {
			return fmt.Errorf("%d NetIPs left", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// update changes a pool, retrying on conflicts with the controller.
func update(t testing.TB, name string, change func(*v1alpha1.NetPool)) {
	t.Helper()
	if err := testenv.Eventually(context.Background(), 30*time.Second, func() error {
		p := &v1alpha1.NetPool{}
		if err := kube.Get(context.Background(), types.NamespacedName{Name: name}, p); err != nil {
			return err
		}
		change(p)
		return kube.Update(context.Background(), p)
	}); err != nil {
		t.Fatal(err)
	}
}

// TestIPConflictResolved: a pool listing an IP of another pool says so;
// once the other pool is deleted the IP becomes this pool's, without
// anything else touching it.
func TestIPConflictResolved(t *testing.T) {
	base := startProvider(t, time.Hour)
	ctx := context.Background()
	first := newPool(t, "conflict-first", 41, 2, "10.41.255.1")
	second := &v1alpha1.NetPool{
		ObjectMeta: metav1.ObjectMeta{Name: "conflict-second"},
		Spec:       v1alpha1.NetPoolSpec{Net: "10.41.0.0", Mask: 16, Gateway: "10.41.0.1", Hosts: []string{"10.41.255.2"}, AvailableIPs: []string{"10.41.1.2", "10.41.2.1"}},
	}
	if err := kube.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deletePool(t, second.Name) })
	if err := testenv.Eventually(ctx, time.Minute, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(second), second); err != nil {
			return err
		}
		c := second.Status.GetCondition(xpv2.TypeReady)
		if second.Status.Status != v1alpha1.NetPoolInitializing || c.Reason != v1alpha1.ReasonIPConflict || c.Message != "IPs already in another NetPool: 10.41.1.2 (pool conflict-first)" {
			return fmt.Errorf("status %s, condition %+v", second.Status.Status, c)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, e, _ := call(base, http.MethodPost, ippool.AllocatorPath, ippool.Request{Host: "10.41.255.2", ContainerID: "c", IPAddr: "10.41.1.2"}); e.Code != ippool.CodeIPNotInPool {
		t.Errorf("asking the second pool for the first pool's IP: %+v", e)
	}

	deletePool(t, first.Name)
	// At once, not at some later resync.
	if err := testenv.Eventually(ctx, 15*time.Second, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(second), second); err != nil {
			return err
		}
		if s := second.Status; s.Status != v1alpha1.NetPoolNormal || s.Total != 2 || s.Available != 2 {
			return fmt.Errorf("status %+v", s)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if ip := netIP(t, "10.41.1.2"); ip.Spec.Pool != second.Name || ip.Labels[v1alpha1.LabelNetPool] != second.Name {
		t.Errorf("the IP after the first pool went: %+v", ip)
	}
	if l := allocate(t, base, ippool.Request{Host: "10.41.255.2", ContainerID: "c", IPAddr: "10.41.1.2"}); l.Pool != second.Name {
		t.Errorf("lease %+v", l)
	}
}
