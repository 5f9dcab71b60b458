package ippool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/ippool"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// hostsOf are n host IPs of a test's octet.
func hostsOf(octet, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("10.%d.255.%d", octet, i+1)
	}
	return out
}

// parallel runs fn(i) for i in [0, n) at once and waits.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(i) })
	}
	wg.Wait()
}

// TestParallelAllocateRelease: 200 containers on 10 hosts ask at once for
// the 200 IPs of a pool: each gets one, no IP twice; 50 more then find
// none left; 200 releases at once free them all.
func TestParallelAllocateRelease(t *testing.T) {
	base := startProvider(t, time.Hour)
	hosts := hostsOf(40, 10)
	newPool(t, "parallel", 40, 200, hosts...)
	reqs := make([]ippool.Request, 250)
	for i := range reqs {
		reqs[i] = ippool.Request{Host: hosts[i%10], ContainerID: fmt.Sprintf("c%03d", i), PodName: fmt.Sprintf("p%03d", i), PodNamespace: "default"}
	}
	envs := make([]ippool.Envelope, 250)
	errs := make([]error, 250)
	parallel(200, func(i int) { _, envs[i], errs[i] = call(base, http.MethodPost, ippool.AllocatorPath, reqs[i]) })
	byIP := map[string]string{}
	for i := range 200 {
		if errs[i] != nil || envs[i].Code != ippool.CodeOK || len(envs[i].Data) != 1 {
			t.Fatalf("allocate %s: %+v %v", reqs[i].ContainerID, envs[i], errs[i])
		}
		ip := envs[i].Data[0].IPAddr
		if other, dup := byIP[ip]; dup {
			t.Errorf("IP %s given to %s and %s", ip, other, reqs[i].ContainerID)
		}
		byIP[ip] = reqs[i].ContainerID
	}
	// What the API said is what the NetIPs record.
	for ip, c := range byIP {
		if s := netIP(t, ip).Status; s.Status != v1alpha1.NetIPActive || s.ContainerID != c {
			t.Errorf("NetIP %s: %+v, answered to %s", ip, s, c)
		}
	}
	waitCounts(t, "parallel", 200, 0, 200, 0)

	parallel(50, func(i int) {
		_, envs[200+i], errs[200+i] = call(base, http.MethodPost, ippool.AllocatorPath, reqs[200+i])
	})
	for i := 200; i < 250; i++ {
		if errs[i] != nil || envs[i].Code != ippool.CodeNoIPLeft {
			t.Errorf("allocate %s from a full pool: %+v %v", reqs[i].ContainerID, envs[i], errs[i])
		}
	}

	parallel(200, func(i int) { _, envs[i], errs[i] = call(base, http.MethodDelete, ippool.AllocatorPath, reqs[i]) })
	for i := range 200 {
		if errs[i] != nil || envs[i].Code != ippool.CodeOK || len(envs[i].Data) != 1 {
			t.Errorf("release %s: %+v %v", reqs[i].ContainerID, envs[i], errs[i])
		}
	}
	waitCounts(t, "parallel", 200, 200, 0, 0)
}

// TestKillMidBurst runs the provider binary, kills it (SIGKILL) a quarter
// of the way through 200 containers on 10 hosts allocating at once, and
// starts another on the same address; callers retry as the CNI does. Each
// container ends with exactly the IP it was answered, no IP is held twice
// and none leaks. The same again while they release: every IP ends
// Available.
func TestKillMidBurst(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bin, err := testenv.BuildProvider(dir)
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, env.KubeConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	addr, err := testenv.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	serving(t)
	base := "https://" + addr
	// Providers are stopped last, after the pool's cleanup has used them.
	var mu sync.Mutex
	var running []*testenv.Provider
	t.Cleanup(func() {
		for _, p := range running {
			p.StopWithin(t, 10*time.Second)
		}
	})
	start := func() (*testenv.Provider, error) {
		p, err := testenv.StartProvider(dir, bin, kc, "--netservice-bind-address", addr, "--netservice-cert-dir", certDir)
		if err == nil {
			mu.Lock()
			running = append(running, p)
			mu.Unlock()
		}
		return p, err
	}
	p, err := start()
	if err != nil {
		t.Fatal(err)
	}
	waitServing(t, base)
	hosts := hostsOf(41, 10)
	newPool(t, "kill", 41, 300, hosts...)
	reqs := make([]ippool.Request, 200)
	for i := range reqs {
		reqs[i] = ippool.Request{Host: hosts[i%10], ContainerID: fmt.Sprintf("k%03d", i), PodName: fmt.Sprintf("k%03d", i), PodNamespace: "default"}
	}

	// burst makes every call until it is answered other than "retry",
	// polling as a CNI plugin retries; once a quarter have succeeded it
	// kills p and starts the next provider.
	burst := func(method string, p *testenv.Provider) ([]ippool.Envelope, *testenv.Provider) {
		envs := make([]ippool.Envelope, len(reqs))
		var ok, refused atomic.Int32
		next := make(chan *testenv.Provider, 1)
		parallel(len(reqs), func(i int) {
			err := testenv.Eventually(ctx, 2*time.Minute, func() error {
				_, e, err := call(base, method, ippool.AllocatorPath, reqs[i])
				if err != nil {
					refused.Add(1)
					return err // no provider listening: retry
				}
				if e.Code == ippool.CodeUnavailable {
					return errors.New(e.Message)
				}
				envs[i] = e
				if e.Code == ippool.CodeOK && ok.Add(1) == int32(len(reqs)/4) {
					p.Kill()
					n, err := start()
					if err != nil {
						t.Error(err)
					}
					next <- n
				}
				return nil
			})
			if err != nil {
				t.Errorf("%s %s: %v", method, reqs[i].ContainerID, err)
			}
		})
		// Calls met the dead provider: the kill was mid-burst.
		if refused.Load() == 0 {
			t.Errorf("%s: no call failed while the provider was down", method)
		}
		select {
		case n := <-next:
			return envs, n
		default:
			t.Fatalf("%s: the provider was never killed", method)
			return nil, nil
		}
	}

	envs, p := burst(http.MethodPost, p)
	answered := map[string]string{}
	for i, e := range envs {
		if e.Code != ippool.CodeOK || len(e.Data) != 1 {
			t.Fatalf("allocate %s: %+v", reqs[i].ContainerID, e)
		}
		answered[reqs[i].ContainerID] = e.Data[0].IPAddr
	}
	ips := poolIPs(t, "kill")
	held := map[string]string{}
	for name, ip := range ips {
		if ip.Status.Status != v1alpha1.NetIPActive {
			continue
		}
		if other, dup := held[ip.Status.ContainerID]; dup {
			t.Errorf("container %s holds %s and %s", ip.Status.ContainerID, other, name)
		}
		held[ip.Status.ContainerID] = name
	}
	if len(held) != len(reqs) {
		t.Errorf("%d IPs Active after %d allocations", len(held), len(reqs))
	}
	for c, ip := range answered {
		if held[c] != ip {
			t.Errorf("container %s was answered %s, but the NetIPs say it holds %q", c, ip, held[c])
		}
	}

	envs, _ = burst(http.MethodDelete, p)
	for i, e := range envs {
		if e.Code != ippool.CodeOK {
			t.Errorf("release %s: %+v", reqs[i].ContainerID, e)
		}
	}
	waitCounts(t, "kill", 300, 300, 0, 0)
}
