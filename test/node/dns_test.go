package node_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/clusterdns"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/node"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestClusterDNS runs CoreDNS on the real node and asks it, from the host,
// through the kube-dns Service: a Service's name resolves to its ClusterIP
// and back, and a name outside the cluster is refused without any packet
// to an address off the machine.
func TestClusterDNS(t *testing.T) {
	if err := node.Supported(); err != nil {
		t.Fatalf("this suite needs the real node: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()

	// The binary itself cannot forward: no plugin that asks another server
	// is compiled in.
	out, err := exec.CommandContext(ctx, "bash", filepath.Join(testenv.RepoRoot(), "cluster", "local", "coredns.sh")).Output()
	if err != nil {
		t.Fatalf("coredns.sh: %v", err)
	}
	list, err := exec.CommandContext(ctx, strings.TrimSpace(string(out)), "-plugins").Output()
	if err != nil {
		t.Fatal(err)
	}
	plugins := strings.Fields(string(list))
	if !slices.Contains(plugins, "kubernetes") {
		t.Fatalf("CoreDNS lacks the kubernetes plugin: %v", plugins)
	}
	for _, p := range []string{"forward", "grpc", "etcd", "route53", "azure", "clouddns", "secondary"} {
		if slices.Contains(plugins, p) {
			t.Errorf("CoreDNS has the %s plugin, which sends queries to other servers", p)
		}
	}

	opt, err := node.ControlPlane(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env, err := testenv.Start(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	n, err := node.Start(ctx, node.Options{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := n.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	if err := node.CheckRoutes(); err != nil {
		t.Fatalf("a Pod or Service address can leave the machine: %v", err)
	}

	start := time.Now()
	ictx, icancel := context.WithTimeout(ctx, 5*time.Minute)
	err = clusterdns.Install(ictx, env.Client, n.Registry())
	icancel()
	if err != nil {
		t.Fatalf("%v\nnode logs: %s", err, n.Logs())
	}
	t.Logf("cluster DNS answering %s after install", time.Since(start).Round(time.Millisecond))

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "dns-check"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
	}
	if err := env.Client.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	fqdn := "web.dns-check.svc." + node.ClusterDomain + "."
	r := clusterdns.Resolver()
	err = testenv.Eventually(ctx, 30*time.Second, func() error {
		addrs, err := r.LookupHost(ctx, fqdn)
		if err != nil {
			return err
		}
		if !slices.Equal(addrs, []string{svc.Spec.ClusterIP}) {
			return fmt.Errorf("%s is %v, want [%s]", fqdn, addrs, svc.Spec.ClusterIP)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	names, err := r.LookupAddr(ctx, svc.Spec.ClusterIP)
	if err != nil || !slices.Contains(names, fqdn) {
		t.Errorf("%s reverses to %v (%v), want %s", svc.Spec.ClusterIP, names, err, fqdn)
	}

	// In the cluster's zone a missing name is NXDOMAIN: CoreDNS is
	// authoritative there. Anywhere else it refuses rather than asks.
	for _, q := range []struct {
		name  string
		qtype dnsmessage.Type
		want  dnsmessage.RCode
	}{
		{"absent.dns-check.svc." + node.ClusterDomain + ".", dnsmessage.TypeA, dnsmessage.RCodeNameError},
		{"example.com.", dnsmessage.TypeA, dnsmessage.RCodeRefused},
		{"kubernetes.io.", dnsmessage.TypeAAAA, dnsmessage.RCodeRefused},
		{"8.8.8.8.in-addr.arpa.", dnsmessage.TypePTR, dnsmessage.RCodeRefused},
	} {
		h, answers, err := query(ctx, q.name, q.qtype)
		if err != nil {
			t.Errorf("%s %s: %v", q.name, q.qtype, err)
			continue
		}
		if h.RCode != q.want || len(answers) != 0 {
			t.Errorf("%s %s: %s with %d answers, want %s and none", q.name, q.qtype, h.RCode, len(answers), q.want)
		}
	}
	if addrs, err := r.LookupHost(ctx, "example.com."); err == nil {
		t.Errorf("example.com resolved to %v through the cluster DNS", addrs)
	}

	// Installing again changes nothing: the same image digest and
	// Corefile leave the Deployment's Pod template, so no Pod restarts.
	var dep appsv1.Deployment
	key := client.ObjectKey{Namespace: clusterdns.Namespace, Name: clusterdns.Name}
	if err := env.Client.Get(ctx, key, &dep); err != nil {
		t.Fatal(err)
	}
	ictx, icancel = context.WithTimeout(ctx, 2*time.Minute)
	err = clusterdns.Install(ictx, env.Client, n.Registry())
	icancel()
	if err != nil {
		t.Fatalf("second install: %v", err)
	}
	generation := dep.Generation
	if err := env.Client.Get(ctx, key, &dep); err != nil {
		t.Fatal(err)
	}
	if dep.Generation != generation {
		t.Errorf("a second install changed the Deployment (generation %d to %d)", generation, dep.Generation)
	}

	// Every flow the CoreDNS Pod opened, and every flow to the DNS Service,
	// stays between loopback and 10/8 addresses of this machine (the API
	// server, the host, the Pod).
	pod := corednsPod(ctx, t, env.Client)
	for _, filter := range [][]string{{"-s", pod}, {"-d", node.DNSIP}} {
		addrs := flowAddrs(t, filter...)
		if len(addrs) == 0 {
			t.Errorf("conntrack %v shows no flow; the check would prove nothing", filter)
		}
		for _, a := range addrs {
			if !a.IsLoopback() && !netip.MustParsePrefix("10.0.0.0/8").Contains(a) {
				t.Errorf("conntrack %v: a flow involves %s, off the machine", filter, a)
			}
		}
	}
}

// query sends one question to the cluster DNS over UDP and returns the
// answer's header and records.
func query(ctx context.Context, name string, qtype dnsmessage.Type) (dnsmessage.Header, []dnsmessage.Resource, error) {
	id := uint16(rand.Uint32())
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, RecursionDesired: true})
	if err := b.StartQuestions(); err != nil {
		return dnsmessage.Header{}, nil, err
	}
	if err := b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: qtype, Class: dnsmessage.ClassINET}); err != nil {
		return dnsmessage.Header{}, nil, err
	}
	msg, err := b.Finish()
	if err != nil {
		return dnsmessage.Header{}, nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp", net.JoinHostPort(node.DNSIP, "53"))
	if err != nil {
		return dnsmessage.Header{}, nil, err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(msg); err != nil {
		return dnsmessage.Header{}, nil, err
	}
	buf := make([]byte, 1232)
	nr, err := c.Read(buf)
	if err != nil {
		return dnsmessage.Header{}, nil, err
	}
	var p dnsmessage.Parser
	h, err := p.Start(buf[:nr])
	if err != nil {
		return h, nil, err
	}
	if h.ID != id || !h.Response {
		return h, nil, fmt.Errorf("reply id %d response %t to query %d", h.ID, h.Response, id)
	}
	if err := p.SkipAllQuestions(); err != nil {
		return h, nil, err
	}
	answers, err := p.AllAnswers()
	return h, answers, err
}

func corednsPod(ctx context.Context, t *testing.T, kube client.Client) string {
	t.Helper()
	var pods corev1.PodList
	if err := kube.List(ctx, &pods, client.InNamespace(clusterdns.Namespace), client.MatchingLabels{"k8s-app": "kube-dns"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			return p.Status.PodIP
		}
	}
	t.Fatalf("no CoreDNS Pod with an IP among %d", len(pods.Items))
	return ""
}

var flowAddr = regexp.MustCompile(`\b(?:src|dst)=(\S+)`)

// flowAddrs lists the addresses, both directions, of the conntrack flows
// that match filter.
func flowAddrs(t *testing.T, filter ...string) []netip.Addr {
	t.Helper()
	cmd := exec.Command("conntrack", append([]string{"-L"}, filter...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("conntrack -L %v: %v: %s", filter, err, stderr.String())
	}
	var addrs []netip.Addr
	for _, m := range flowAddr.FindAllStringSubmatch(stdout.String(), -1) {
		a, err := netip.ParseAddr(m[1])
		if err != nil {
			t.Fatalf("conntrack: %q is not an address", m[1])
		}
		addrs = append(addrs, a)
	}
	t.Logf("conntrack -L %v:\n%s", filter, stdout.String())
	return addrs
}
