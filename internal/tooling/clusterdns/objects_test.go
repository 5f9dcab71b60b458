package clusterdns

import (
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/node"
)

func TestReverseZone(t *testing.T) {
	for p, want := range map[string]string{
		"10.0.0.0/24":   "0.0.10.in-addr.arpa",
		"10.244.0.0/16": "244.10.in-addr.arpa",
		"10.244.3.7/16": "244.10.in-addr.arpa",
		"192.0.2.0/8":   "192.in-addr.arpa",
	} {
		if got := reverseZone(netip.MustParsePrefix(p)); got != want {
			t.Errorf("reverseZone(%s) = %q, want %q", p, got, want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("reverseZone(10.0.0.0/20) did not refuse a range off an octet boundary")
		}
	}()
	reverseZone(netip.MustParsePrefix("10.0.0.0/20"))
}

// The Corefile's plugins are exactly these: nothing that could send a query
// off the machine.
func TestCorefileAnswersClusterZonesOnly(t *testing.T) {
	cf := corefile()
	var plugins []string
	for _, line := range strings.Split(cf, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] == "}" || strings.HasPrefix(line, "        ") {
			continue
		}
		plugins = append(plugins, f[0])
	}
	if want := []string{"errors", "health", "ready", "kubernetes"}; !slices.Equal(plugins, want) {
		t.Errorf("plugins %v, want %v in:\n%s", plugins, want, cf)
	}
	header := strings.Fields(strings.Split(cf, "\n")[0])
	want := []string{"cluster.local:1053", "0.0.10.in-addr.arpa:1053", "244.10.in-addr.arpa:1053", "{"}
	if !slices.Equal(header, want) {
		t.Errorf("server block %v, want %v", header, want)
	}
	if !strings.Contains(cf, "kubernetes cluster.local 0.0.10.in-addr.arpa 244.10.in-addr.arpa {") {
		t.Errorf("the kubernetes plugin does not serve the block's zones:\n%s", cf)
	}
}

func TestObjectsFitTogether(t *testing.T) {
	var dep *appsv1.Deployment
	var svc *corev1.Service
	for _, o := range objects("reg/coredns@sha256:0") {
		if o.GetObjectKind().GroupVersionKind().Kind == "" {
			t.Errorf("%T %s has no kind: server-side apply needs it", o, o.GetName())
		}
		switch o := o.(type) {
		case *appsv1.Deployment:
			dep = o
		case *corev1.Service:
			svc = o
		}
	}
	if svc.Name != "kube-dns" || svc.Namespace != "kube-system" || svc.Spec.ClusterIP != node.DNSIP {
		t.Errorf("service %s/%s at %s, want kube-system/kube-dns at %s", svc.Namespace, svc.Name, svc.Spec.ClusterIP, node.DNSIP)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	ports := map[string]corev1.ContainerPort{}
	for _, p := range c.Ports {
		ports[p.Name] = p
	}
	for _, sp := range svc.Spec.Ports {
		cp, ok := ports[sp.TargetPort.StrVal]
		if sp.Port != 53 || !ok || cp.Protocol != sp.Protocol || cp.ContainerPort < 1024 {
			t.Errorf("service port %s %d/%s reaches container port %+v; want 53 to an unprivileged port of the same protocol", sp.Name, sp.Port, sp.Protocol, cp)
		}
	}
	for _, p := range svc.Spec.Ports {
		if !strings.Contains(corefile(), ":"+strconv.Itoa(int(ports[p.TargetPort.StrVal].ContainerPort))+" ") {
			t.Errorf("CoreDNS does not listen on the %s port", p.Name)
		}
	}
	// The probes ask the ports the health and ready plugins listen on.
	for plugin, probe := range map[string]*corev1.Probe{"health": c.LivenessProbe, "ready": c.ReadinessProbe} {
		m := regexp.MustCompile(`(?m)^\s*` + plugin + ` :(\d+)$`).FindStringSubmatch(corefile())
		if m == nil || probe.HTTPGet.Port.String() != m[1] || probe.HTTPGet.Path != "/"+plugin {
			t.Errorf("the %s probe asks %s%s; the plugin listens on %v", plugin, probe.HTTPGet.Port.String(), probe.HTTPGet.Path, m)
		}
	}
	if sel := dep.Spec.Selector.MatchLabels; !maps.Equal(sel, svc.Spec.Selector) || !maps.Equal(sel, dep.Spec.Template.Labels) {
		t.Errorf("selectors differ: deployment %v, template %v, service %v", sel, dep.Spec.Template.Labels, svc.Spec.Selector)
	}
	if dep.Spec.Template.Spec.DNSPolicy != corev1.DNSDefault {
		t.Errorf("CoreDNS's Pod has dnsPolicy %s; it would ask itself", dep.Spec.Template.Spec.DNSPolicy)
	}
}
