package portpool

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	clbsdk "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/clb/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
)

func TestListenerNames(t *testing.T) {
	long := strings.Repeat("n", 200)
	cases := map[string]struct {
		reason    string
		ns, name  string
		port      int64
		want      string
		maxLength int
	}{
		"Short":  {"namespace_name-port", "games", "rooms", 30000, "games_rooms-30000", 80},
		"Dotted": {"dots in a pool name are kept", "games", "eu.rooms", 7, "games_eu.rooms-7", 80},
		"Long":   {"a long name is cut and made unique by a hash of namespace/name", "games", long, 65535, "games_" + strings.Repeat("n", 59) + "-" + shortHash("games/"+long) + "-65535", 80},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := newNamer(tc.ns, tc.name).listenerName(tc.port)
			if got != tc.want || len(got) > tc.maxLength {
				t.Errorf("%s: %q (%d characters), want %q", tc.reason, got, len(got), tc.want)
			}
		})
	}
	// Namespaces cannot hold "_", so two pools never share a prefix.
	if newNamer("a", "b-c").prefix == newNamer("a-b", "c").prefix {
		t.Error("prefixes of different pools collide")
	}
}

func TestClientToken(t *testing.T) {
	uid := "0b5f0a5e-5a55-4a4f-9d7b-3d0c7a1e2f11"
	base := clientToken(uid, 1, []string{"lb-b", "lb-a"})
	for _, tc := range []struct {
		reason string
		got    string
		same   bool
	}{
		{"the same situation retries with the same token", clientToken(uid, 1, []string{"lb-a", "lb-b"}), true},
		{"another index is another load balancer", clientToken(uid, 2, []string{"lb-a", "lb-b"}), false},
		{"a load balancer gone behind the pool's back changes the token", clientToken(uid, 1, []string{"lb-a"}), false},
		{"another pool has its own tokens", clientToken("other", 1, []string{"lb-a", "lb-b"}), false},
	} {
		if (tc.got == base) != tc.same {
			t.Errorf("%s: %q vs %q", tc.reason, tc.got, base)
		}
	}
	if len(base) > maxClientToken || !strings.HasPrefix(base, "pp-"+uid+"-1-") {
		t.Errorf("token %q: want pp-<uid>-<index>-…, at most %d characters", base, maxClientToken)
	}
	if long := clientToken(strings.Repeat("u", 80), 3, nil); len(long) > maxClientToken {
		t.Errorf("a long uid gives a token of %d characters", len(long))
	}
}

func TestLBCreateRequest(t *testing.T) {
	cr := &v1alpha1.PortPool{ObjectMeta: metav1.ObjectMeta{Namespace: "games", Name: "rooms", UID: "uid-1"}}
	cr.Spec.ForProvider.AutoCreate = &v1alpha1.PoolAutoCreate{MaxLoadBalancers: 3, Template: v1alpha1.LoadBalancerParameters{
		VipIsp: clb.Ptr("CMCC"), Tags: map[string]string{"team": "t", TagPool: "not this"},
	}}
	req := lbCreateRequest(cr, 2, []string{"lb-1", "lb-0"})
	tags := map[string]string{}
	for _, t := range req.Tags {
		tags[*t.TagKey] = *t.TagValue
	}
	want := map[string]string{
		TagPoolUID: "uid-1", TagPool: "games/rooms", "team": "t",
		mr.TagNamespace: "games", mr.TagKind: "PortPool",
	}
	if diff := cmp.Diff(want, tags); diff != "" {
		t.Errorf("tags: the pool's, over the template's: -want +got:\n%s", diff)
	}
	if got := clb.Deref(req.LoadBalancerName); got != "rooms-2" {
		t.Errorf("name %q, want rooms-2", got)
	}
	if clb.Deref(req.VipIsp) != "CMCC" || clb.Deref(req.LoadBalancerType) != "OPEN" {
		t.Errorf("template fields: isp %q type %q", clb.Deref(req.VipIsp), clb.Deref(req.LoadBalancerType))
	}
	if got, want := clb.Deref(req.ClientToken), clientToken("uid-1", 2, []string{"lb-0", "lb-1"}); got != want {
		t.Errorf("token %q, want %q", got, want)
	}
	if cr.Spec.ForProvider.AutoCreate.Template.Tags[TagPool] != "not this" {
		t.Error("the spec's template was changed")
	}
	if n := lbName(strings.Repeat("x", 70), 12); len(n) != maxLBName || !strings.HasSuffix(n, "-12") {
		t.Errorf("long pool name gives load balancer name %q", n)
	}
}

func TestCreateRequestSettings(t *testing.T) {
	s := &v1alpha1.PoolListenerSettings{
		Scheduler:         clb.Ptr("LEAST_CONN"),
		SessionExpireTime: clb.Ptr(int64(0)),
		HealthCheck:       &v1alpha1.HealthCheck{Enabled: clb.Ptr(true)},
		Certificate:       &v1alpha1.Certificate{CertID: "cert-1"},
	}
	owner := newNamer("ns", "p")
	tcp := createRequest(shape{seg: 1}, "lb-1", "TCP", []int64{1}, owner, s)
	ssl := createRequest(shape{seg: 1}, "lb-1", "TCP_SSL", []int64{1}, owner, s)
	if tcp.Certificate != nil || ssl.Certificate == nil || clb.Deref(ssl.Certificate.SSLMode) != "UNIDIRECTIONAL" {
		t.Errorf("the certificate goes to TCP_SSL and QUIC only: TCP %v, TCP_SSL %v", tcp.Certificate, ssl.Certificate)
	}
	if clb.Deref(tcp.Scheduler) != "LEAST_CONN" || clb.Deref(tcp.HealthCheck.HealthSwitch) != 1 || tcp.SessionExpireTime == nil {
		t.Errorf("settings not sent: %+v", tcp)
	}
	got := clb.DiffPoolListener(s, "TCP", &clbsdk.Listener{Scheduler: clb.Ptr("WRR"), SessionExpireTime: clb.Ptr(int64(0)), HealthCheck: &clbsdk.HealthCheck{HealthSwitch: clb.Ptr(int64(0))}})
	if want := "scheduler: want LEAST_CONN, got WRR; healthCheck.enabled: want true, got false"; got != want {
		t.Errorf("diff %q, want %q", got, want)
	}
	if m := clb.ModifyPoolListenerRequest("lb-1", "lbl-1", "QUIC", s); m.Certificate == nil || m.ListenerName != nil {
		t.Errorf("modify: a QUIC listener gets the certificate and keeps its name: %+v", m)
	}
}
