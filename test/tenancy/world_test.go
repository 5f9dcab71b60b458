package tenancy

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	clbv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/endpoints"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/randhostport"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
	pwebhook "github.com/tencentcloud-network/provider-tencentcloud-network/internal/webhook"
)

// The two teams' namespaces, and the pool each team's platform admin made
// for it.
const (
	NamespaceA = "tenant-a"
	NamespaceB = "tenant-b"
	PoolA      = "arena"
	PoolB      = "games"
)

const wait = 90 * time.Second

// The world every case runs in, set by setup.
var w *world

type world struct {
	configs map[Who]*rest.Config
	clients map[Who]client.Client
	// LB is the load balancer of each team's pool, by namespace.
	LB map[string]string
	// Webhook is the host:port of the provider's Pod webhooks.
	Webhook string
}

// Client is who's client: RBAC and admission decide what it may do.
func Client(who Who) client.Client { return w.clients[who] }

// Config is who's REST config, for clients other than controller-runtime's.
func Config(who Who) *rest.Config { return w.configs[who] }

// SetIdentity gives who (Agent, Node) a config, once a case has made one.
func SetIdentity(who Who, cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		return err
	}
	w.configs[who], w.clients[who] = cfg, c
	return nil
}

// setup makes the two teams, their users and pools, and starts the provider
// as its ServiceAccount with the Pod webhooks, as cmd/provider runs it.
func setup(t *testing.T) *world {
	t.Helper()
	ctx := context.Background()
	w = &world{configs: map[Who]*rest.Config{}, clients: map[Who]client.Client{}, LB: map[string]string{}}
	if _, err := testenv.Apply(ctx, kube, filepath.Join(testenv.RepoRoot(), "examples", "provider", "tenants.yaml")); err != nil {
		t.Fatal(err)
	}
	// Kubernetes' admin role gets its rules from the controller manager's
	// aggregation, which this control plane does not run: what it would
	// give a namespace admin for Pods is written out here.
	workloads := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "tenancy-workloads"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
			{APIGroups: []string{""}, Resources: []string{"events", "services", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	if err := kube.Create(ctx, workloads); err != nil {
		t.Fatal(err)
	}
	for who, ns := range map[Who]string{TenantA: NamespaceA, TenantB: NamespaceB} {
		team := strings.TrimPrefix(string(who), "tenant-")
		if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{"team": team}}}); err != nil {
			t.Fatal(err)
		}
		for _, role := range []string{workloads.Name, "provider-tencentcloud-network:tenant"} {
			rb := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.ReplaceAll(role, ":", "-")},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: string(who)}},
			}
			if err := kube.Create(ctx, rb); err != nil {
				t.Fatal(err)
			}
		}
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: string(who), Groups: []string{"team-" + team}}
		if err := SetIdentity(who, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if err := SetIdentity(Admin, env.Config); err != nil {
		t.Fatal(err)
	}
	if err := SetIdentity(Anonymous, rest.AnonymousClientConfig(env.Config)); err != nil {
		t.Fatal(err)
	}
	// The tenant role reaches the API server's RBAC cache at once, but
	// wait for it: a first case refused for that reason would prove nothing.
	eventuallyT(t, "tenant RBAC honoured", func() error {
		return Client(TenantA).List(ctx, &v1alpha1.PodAddressPolicyList{}, client.InNamespace(NamespaceA))
	})

	startProvider(t)
	for ns, name := range map[string]string{NamespaceA: PoolA, NamespaceB: PoolB} {
		w.LB[ns] = pool(t, ns, name)
	}
	for _, fn := range prepared {
		fn(ctx, t)
	}
	return w
}

// prepared are what the areas' files set up before the first case (and
// its first snapshot), once the provider runs.
var prepared []func(ctx context.Context, t *testing.T)

// prepare adds fn to what setup runs last; call it from an init function.
func prepare(fn func(ctx context.Context, t *testing.T)) { prepared = append(prepared, fn) }

// startProvider runs the provider as its ServiceAccount with the RBAC of
// every feature and the Pod webhooks installed through the package's
// webhook configuration, served as cmd/provider serves them: HTTP/1.1
// only, to callers with the API server's client certificate.
func startProvider(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	ca, err := testenv.ServingCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	addr, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	host, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	wso, err := endpoints.Webhook(host, port, dir, webhookClientCA)
	if err != nil {
		t.Fatal(err)
	}
	ws := webhook.NewServer(wso)
	w.Webhook = addr
	wo := pwebhook.Options{
		Admission:    pwebhook.NewAdmission(time.Minute, logging.NewNopLogger()),
		RandHostPort: randhostport.New(randhostport.DefaultRange(), logging.NewNopLogger()),
	}
	shared.StartProvider(t, suite.AsProvider(testenv.Features()...), suite.PodCache(), suite.Webhooks(ws, wo))
	eventuallyT(t, "webhook server up", func() error {
		c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only waits for the listener
		if err != nil {
			return err
		}
		return c.Close()
	})
	cfg, err := testenv.InstallPodWebhook(context.Background(), kube, "tenancy-pod-address", "https://"+addr, ca)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), cfg) })
}

// pool makes, as the admin, a load balancer and a PortPool over it in ns,
// waits until its listeners exist, and returns the load balancer's id.
func pool(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	lb := &clbv1alpha1.LoadBalancer{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       clbv1alpha1.LoadBalancerSpec{ForProvider: clbv1alpha1.LoadBalancerParameters{Type: clb.Ptr("OPEN")}},
	}
	if err := kube.Create(ctx, lb); err != nil {
		t.Fatal(err)
	}
	pp := &clbv1alpha1.PortPool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clbv1alpha1.PortPoolSpec{ForProvider: clbv1alpha1.PortPoolParameters{
			StartPort: 20000, EndPort: 20099, Protocols: []string{"TCP", "UDP"},
			LoadBalancerIDRefs: []xpv2.NamespacedReference{{Name: name}},
		}},
	}
	if err := kube.Create(ctx, pp); err != nil {
		t.Fatal(err)
	}
	eventuallyT(t, "pool "+ns+"/"+name+" ready", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pp), pp); err != nil {
			return err
		}
		if len(pp.Status.AtProvider.LoadBalancers) == 0 {
			return errors.New("no load balancers in status")
		}
		for _, l := range pp.Status.AtProvider.LoadBalancers {
			if l.State != "Ready" || l.ListenersReady != l.ListenersWanted {
				return errors.Errorf("load balancer %s: %s, %d/%d listeners", l.ID, l.State, l.ListenersReady, l.ListenersWanted)
			}
		}
		return nil
	})
	if err := kube.Get(ctx, client.ObjectKeyFromObject(lb), lb); err != nil {
		t.Fatal(err)
	}
	return meta.GetExternalName(lb)
}

func eventuallyT(t *testing.T, what string, fn func() error) {
	t.Helper()
	if err := testenv.Eventually(context.Background(), wait, fn); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Pod creates, as who, a Pod in ns with one TCP and one UDP container port
// and annotations, then sets its IP as a kubelet would (the admin). The
// error is the API server's answer to who's create.
func Pod(ctx context.Context, who Who, ns, name, ip string, annotations map[string]string) (*corev1.Pod, error) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "example/server", Ports: []corev1.ContainerPort{
			{Name: "game", ContainerPort: 7000, Protocol: corev1.ProtocolTCP},
			{Name: "voice", ContainerPort: 7001, Protocol: corev1.ProtocolUDP},
		}}}},
	}
	if err := Client(who).Create(ctx, p); err != nil {
		return nil, err
	}
	if ip == "" {
		return p, nil
	}
	err := testenv.Eventually(ctx, wait, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP, p.Status.PodIPs, p.Status.HostIP = ip, []corev1.PodIP{{IP: ip}}, "10.0.0.1"
		return kube.Status().Update(ctx, p)
	})
	return p, err
}

// DeletePod deletes a Pod at once, as the admin (there is no kubelet).
func DeletePod(ctx context.Context, t *testing.T, ns, name string) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := kube.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
}

// Refused waits until the provider has refused the address of Pod ns/name:
// its PodAddress is not Bound and says want in its message or conditions,
// or a Warning Event on the Pod does. It returns what it says.
func Refused(ctx context.Context, ns, name, want string) (string, error) {
	var said string
	err := testenv.Eventually(ctx, wait, func() error {
		var seen []string
		pa := &v1alpha1.PodAddress{}
		switch err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pa); {
		case err == nil:
			if pa.Status.State == v1alpha1.StateBound || len(pa.Status.Bindings) > 0 && pa.Status.Bindings[0].Address != "" {
				return errors.Errorf("PodAddress %s/%s is bound: %s", ns, name, jsonOf(pa.Status.Bindings))
			}
			seen = append(seen, pa.Status.Message)
			for _, c := range pa.Status.Conditions {
				seen = append(seen, c.Message)
			}
		case client.IgnoreNotFound(err) != nil:
			return err
		}
		events := &corev1.EventList{}
		if err := kube.List(ctx, events, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning {
				seen = append(seen, e.Message)
			}
		}
		for _, s := range seen {
			if strings.Contains(s, want) {
				said = s
				return nil
			}
		}
		return errors.Errorf("nothing says %q yet; seen %q", want, seen)
	})
	return said, err
}

// APIRefusal is the message of an API server's refusal of a request, or an
// error when err is nil (the request went through).
func APIRefusal(what string, err error) (string, error) {
	if err == nil {
		return "", errors.Errorf("%s: the API server accepted it", what)
	}
	return err.Error(), nil
}

// A snapshot is what an attack must not change: the cloud, and the objects
// of the namespaces of everyone but the attacker.
type snapshot struct {
	Cloud   emulator.Inventory
	Objects map[string]string
}

func (w *world) snapshot(ctx context.Context, t *testing.T, attacker Who) snapshot {
	t.Helper()
	s := snapshot{Cloud: cloud.Inventory(), Objects: map[string]string{}}
	for _, ns := range []string{NamespaceA, NamespaceB} {
		if attacker == TenantA && ns == NamespaceA || attacker == TenantB && ns == NamespaceB || editors[attacker] == ns {
			continue
		}
		if err := objectsOf(ctx, ns, s.Objects); err != nil {
			t.Fatal(err)
		}
	}
	for _, fn := range compared {
		if err := fn(ctx, s.Objects); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// compared are what the areas' files add to every snapshot.
var compared []func(ctx context.Context, into map[string]string) error

// compare adds to every snapshot what fn records (a key per object, its
// parts an attack must not change); call it from an init function.
func compare(fn func(ctx context.Context, into map[string]string) error) {
	compared = append(compared, fn)
}

// objectsOf records the parts of ns's objects that an attack could change:
// Pods' annotations and labels, PodAddresses' specs and what they hold,
// policies' specs, pools' specs and use.
func objectsOf(ctx context.Context, ns string, into map[string]string) error {
	pods := &corev1.PodList{}
	pas := &v1alpha1.PodAddressList{}
	pols := &v1alpha1.PodAddressPolicyList{}
	pools := &clbv1alpha1.PortPoolList{}
	for _, l := range []client.ObjectList{pods, pas, pols, pools} {
		if err := kube.List(ctx, l, client.InNamespace(ns)); err != nil {
			return err
		}
	}
	for _, p := range pods.Items {
		into["Pod "+ns+"/"+p.Name] = jsonOf([]any{p.Labels, p.Annotations, p.Spec.Containers})
	}
	for _, p := range pas.Items {
		into["PodAddress "+ns+"/"+p.Name] = jsonOf([]any{p.Spec, p.Status.State, p.Status.Bindings, p.Status.EIP})
	}
	for _, p := range pols.Items {
		into["PodAddressPolicy "+ns+"/"+p.Name] = jsonOf(p.Spec)
	}
	for _, p := range pools.Items {
		into["PortPool "+ns+"/"+p.Name] = jsonOf([]any{p.Spec.ForProvider, p.Status.AtProvider.Allocated, p.Status.AtProvider.Bindings})
	}
	return nil
}

// same says what differs between s and o.
func (s snapshot) same(o snapshot) error {
	var diffs []string
	if a, b := jsonOf(s.Cloud), jsonOf(o.Cloud); a != b {
		diffs = append(diffs, fmt.Sprintf("the cloud changed:\nbefore %s\nafter %s", a, b))
	}
	keys := map[string]bool{}
	for k := range s.Objects {
		keys[k] = true
	}
	for k := range o.Objects {
		keys[k] = true
	}
	var names []string
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if s.Objects[k] != o.Objects[k] {
			diffs = append(diffs, fmt.Sprintf("%s changed: before %s, after %s", k, s.Objects[k], o.Objects[k]))
		}
	}
	if len(diffs) > 0 {
		return errors.New(strings.Join(diffs, "\n"))
	}
	return nil
}

// Bound waits until Pod ns/name's PodAddress is Bound on load balancer lb
// and the cloud has ip among that load balancer's targets.
func Bound(ctx context.Context, ns, name, lb, ip string) error {
	return testenv.Eventually(ctx, wait, func() error {
		pa := &v1alpha1.PodAddress{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pa); err != nil {
			return err
		}
		if pa.Status.State != v1alpha1.StateBound {
			return errors.Errorf("state %q: %s", pa.Status.State, pa.Status.Message)
		}
		for _, l := range cloud.Inventory().LoadBalancers {
			if l.ID != lb {
				continue
			}
			for _, li := range l.Listeners {
				for _, tg := range li.Targets {
					if tg.IP == ip {
						return nil
					}
				}
			}
		}
		return errors.Errorf("no target %s on %s", ip, lb)
	})
}

// Raw sends one request to the API server as who and returns the refusal
// it met ("<status>: <body>"), or an error when it was answered with
// success.
func Raw(ctx context.Context, who Who, method, path string, body []byte) (string, error) {
	cfg := Config(who)
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(cfg.Host, "/")+path, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode < 300 {
		return "", errors.Errorf("%s %s as %s: %s", method, path, who, resp.Status)
	}
	var st metav1.Status
	if json.Unmarshal(b, &st) == nil && st.Message != "" {
		return resp.Status + ": " + st.Message, nil
	}
	return resp.Status + ": " + string(b), nil
}
