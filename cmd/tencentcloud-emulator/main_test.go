package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

// startRun runs the command in the background and returns the fields of
// its endpoint line and a function that stops it and returns run's error.
func startRun(t *testing.T, args ...string) (map[string]string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, w := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, w, io.Discard)
		_ = w.Close()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("no endpoint line: %v (run: %v)", err, <-done)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	fields := map[string]string{}
	for _, kv := range strings.Fields(line) {
		k, v, _ := strings.Cut(kv, "=")
		fields[k] = v
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("run did not return after cancel")
			return nil
		}
	}
	t.Cleanup(func() { _ = stop() })
	return fields, stop
}

func TestRunServesTrafficAndSavesState(t *testing.T) {
	state := filepath.Join(t.TempDir(), "cloud.json")
	fields, stop := startRun(t, "--listen", "127.0.0.1:0", "--secret-id", "AKIDcli", "--secret-key", "cli-key",
		"--region", "ap-shanghai", "--task-duration", "0", "--rate-limit", "0", "--state-file", state,
		"--data-plane", "--vip-base", "127.77.0.1")
	if fields["scheme"] != "http" || fields["secretId"] != "AKIDcli" || fields["secretKey"] != "cli-key" || fields["region"] != "ap-shanghai" {
		t.Fatalf("endpoint line fields %v", fields)
	}
	c := emulatortest.NewSDKClient(t, fields["endpoint"], fields["secretId"], fields["secretKey"], fields["region"])

	// A backend process and a load balancer in front of it.
	backend, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = backend.Close() }()
	go func() {
		for {
			conn, err := backend.Accept()
			if err != nil {
				return
			}
			go func() { defer func() { _ = conn.Close() }(); _, _ = io.Copy(conn, conn) }()
		}
	}()
	backendPort := int64(backend.Addr().(*net.TCPAddr).Port)

	create := clb.NewCreateLoadBalancerRequest()
	create.LoadBalancerType = common.StringPtr("OPEN")
	cresp, err := c.CreateLoadBalancer(create)
	if err != nil {
		t.Fatal(err)
	}
	lb := *cresp.Response.LoadBalancerIds[0]
	lr := clb.NewCreateListenerRequest()
	lr.LoadBalancerId, lr.Protocol, lr.Ports = &lb, common.StringPtr("TCP"), common.Int64Ptrs([]int64{18080})
	lresp, err := c.CreateListener(lr)
	if err != nil {
		t.Fatal(err)
	}
	reg := clb.NewRegisterTargetsRequest()
	reg.LoadBalancerId, reg.ListenerId = &lb, lresp.Response.ListenerIds[0]
	reg.Targets = []*clb.Target{{EniIp: common.StringPtr("127.0.0.1"), Port: &backendPort}}
	if _, err := c.RegisterTargets(reg); err != nil {
		t.Fatal(err)
	}
	dl := clb.NewDescribeLoadBalancersRequest()
	dresp, err := c.DescribeLoadBalancers(dl)
	if err != nil {
		t.Fatal(err)
	}
	vip := *dresp.Response.LoadBalancerSet[0].LoadBalancerVips[0]
	if vip != "127.77.0.1" {
		t.Fatalf("VIP %s, want the first pool address", vip)
	}

	conn, err := net.DialTimeout("tcp", net.JoinHostPort(vip, "18080"), 3*time.Second)
	if err != nil {
		t.Fatalf("dial the VIP: %v", err)
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || got != "ping\n" {
		t.Fatalf("echo through the VIP: %q, %v", got, err)
	}

	if err := stop(); err != nil {
		t.Fatalf("run returned %v", err)
	}
	b, err := os.ReadFile(state)
	if err != nil || !strings.Contains(string(b), lb) {
		t.Fatalf("state file does not hold %s (%v)", lb, err)
	}
	// The sockets of the data plane are closed on shutdown.
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(vip, "18080"), time.Second); err == nil {
		_ = c.Close()
		t.Fatalf("the VIP still accepts connections after shutdown")
	}
}

func TestConfigFromFlags(t *testing.T) {
	o, set, err := parseFlags([]string{"--profile", "realistic", "--task-duration", "0", "--lb-quota", "3", "--listener-quota", "7",
		"--eip-quota", "4", "--eip-daily-limit", "9", "--auto-eni", "--vpc-loopback-cidr", "10.0.0.0/8"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.config(set)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Latency != 50*time.Millisecond || cfg.TaskDuration != 0 || cfg.RateLimit != 20 ||
		cfg.OpenLBQuota != 3 || cfg.InternalLBQuota != 3 || cfg.ListenerQuota != 7 ||
		cfg.EIPQuota != 4 || cfg.EIPDailyAllocateLimit != 9 || !cfg.AutoENI ||
		cfg.VPCLoopbackCIDR != netip.MustParsePrefix("10.0.0.0/8") {
		t.Fatalf("config %+v", cfg)
	}
	if cfg.Credentials[0].SecretID != emulator.DefaultSecretID || cfg.Region != emulator.DefaultRegion {
		t.Fatalf("defaults lost: %+v", cfg.Credentials)
	}
	o, set, _ = parseFlags(nil, io.Discard)
	cfg, _ = o.config(set)
	if cfg.TaskDuration != 50*time.Millisecond || cfg.RateLimit != 20 || cfg.Latency != 0 {
		t.Fatalf("default profile %+v", cfg)
	}

	if _, _, err := parseFlags([]string{"--profile"}, io.Discard); err == nil {
		t.Fatal("a flag without value was accepted")
	}
	o, set, _ = parseFlags([]string{"--profile", "turbo"}, io.Discard)
	if _, err := o.config(set); err == nil {
		t.Fatal("an unknown profile was accepted")
	}
	if err := run(context.Background(), []string{"--listen", "256.0.0.1:1"}, io.Discard, io.Discard); err == nil {
		t.Fatal("an unusable listen address was accepted")
	}
	o, set, _ = parseFlags([]string{"--vpc-loopback-cidr", "10.0.0.1"}, io.Discard)
	if _, err := o.config(set); err == nil {
		t.Fatal("an address without prefix length was accepted as --vpc-loopback-cidr")
	}
	if err := run(context.Background(), []string{"--listen", "127.0.0.1:0", "--vpc-loopback-cidr", "8.0.0.0/7"}, io.Discard, io.Discard); err == nil {
		t.Fatal("a --vpc-loopback-cidr shorter than /8 was accepted")
	}
}

// TestCAMPolicyFlag serves with the policy README documents: the provider's
// actions pass, any other is refused from the first call on.
func TestCAMPolicyFlag(t *testing.T) {
	policy := filepath.Join("..", "..", "examples", "providerconfig", "cam-policy.json")
	fields, _ := startRun(t, "--listen", "127.0.0.1:0", "--task-duration", "0", "--rate-limit", "0", "--cam-policy", policy)
	c := emulatortest.NewSDKClient(t, fields["endpoint"], fields["secretId"], fields["secretKey"], fields["region"])
	if _, err := c.DescribeLoadBalancers(clb.NewDescribeLoadBalancersRequest()); err != nil {
		t.Fatalf("an action of the policy: %v", err)
	}
	// RegisterTargets is not in the policy (the provider uses the Batch form).
	_, err := c.RegisterTargets(clb.NewRegisterTargetsRequest())
	if err == nil || !strings.Contains(err.Error(), clb.UNAUTHORIZEDOPERATION) {
		t.Fatalf("an action outside the policy: got %v, want %s", err, clb.UNAUTHORIZEDOPERATION)
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"version":"2.0","statement":[{"effect":"allow","action":"*","resource":"*","condition":{}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	o, set, _ := parseFlags([]string{"--cam-policy", bad}, io.Discard)
	if _, err := o.config(set); err == nil || !strings.Contains(err.Error(), "condition") {
		t.Fatalf("a policy with a condition: got %v, want it refused", err)
	}
}
