package clb

import (
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

func TestPoolCachesOneClientPerKey(t *testing.T) {
	p := NewPool(Options{})
	cfg := clients.Config{SecretID: "AKID1", SecretKey: "k1", Region: "ap-guangzhou", Endpoint: "127.0.0.1:1", Scheme: "http"}

	a, err := p.Client(cfg)
	must(t, err)
	b, err := p.Client(cfg)
	must(t, err)
	if a != b {
		t.Fatal("same Config gave two clients")
	}

	other := cfg
	other.Region = "ap-shanghai"
	c, err := p.Client(other)
	must(t, err)
	if c == a || c.s == a.s {
		t.Fatal("another region must get its own client and limits")
	}

	// A rotated key (or token) is a new client; the old one is dropped from
	// the pool but shares the rate limits, locks and task memory, so old
	// and new never write one load balancer at once.
	rotated := cfg
	rotated.Token = "sts-token"
	d, err := p.Client(rotated)
	must(t, err)
	if d == a {
		t.Fatal("a new token must give a new client")
	}
	if d.s != a.s {
		t.Fatal("rotated credentials must share the scope of the old ones")
	}
	rotated.SecretKey = "k2"
	e, err := p.Client(rotated)
	must(t, err)
	if e == d || e.s != a.s {
		t.Fatal("a new key must give a new client in the same scope")
	}
	n := p.clients.Len()
	if n != 2 { // e, and c for the other region
		t.Fatalf("pool keeps %d clients, want 2 (rotated ones dropped)", n)
	}
	again, err := p.Client(cfg)
	must(t, err)
	if again == a {
		t.Fatal("a dropped client came back from the cache")
	}
}

func TestPoolConcurrentClient(t *testing.T) {
	p := NewPool(Options{Registerer: prometheus.NewRegistry()})
	cfg := clients.Config{SecretID: "AKID1", SecretKey: "k1", Region: "ap-guangzhou", Scheme: "https"}
	const n = 64
	got := make([]*Client, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := p.Client(cfg)
			if err != nil {
				t.Error(err)
			}
			got[i] = c
		})
	}
	wg.Wait()
	for _, c := range got {
		if c != got[0] || c == nil {
			t.Fatal("concurrent Client calls returned different clients")
		}
	}
}

func TestPoolRejectsIncompleteConfig(t *testing.T) {
	p := NewPool(Options{})
	base := clients.Config{SecretID: "AKID1", SecretKey: "k1", Region: "ap-guangzhou"}
	for name, mutate := range map[string]func(*clients.Config){
		"no id":      func(c *clients.Config) { c.SecretID = "" },
		"no key":     func(c *clients.Config) { c.SecretKey = "" },
		"no region":  func(c *clients.Config) { c.Region = "" },
		"bad scheme": func(c *clients.Config) { c.Scheme = "ftp" },
	} {
		cfg := base
		mutate(&cfg)
		if _, err := p.Client(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := p.Client(base); err != nil {
		t.Fatalf("empty scheme means https: %v", err)
	}
}

// TestPoolsShareARegistry builds two pools on one registry, as tests and
// several managers in one process do; the second must not panic and must
// feed the same collectors.
func TestPoolsShareARegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	e, _ := start(t, emulator.Config{}, Options{Registerer: reg})
	p2 := newTestPool(t, Options{Registerer: reg})
	c2, err := p2.Client(testConfig(e.Endpoint()))
	must(t, err)
	_, err = c2.DescribeQuota(testCtx(t))
	must(t, err)
	if got := counterValue(t, reg, "tencentcloud_api_calls_total", map[string]string{"action": "DescribeQuota", "code": "OK"}); got != 1 {
		t.Fatalf("calls_total{DescribeQuota,OK} = %v, want 1", got)
	}
}
