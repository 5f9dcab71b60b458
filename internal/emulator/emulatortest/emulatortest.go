// Package emulatortest helps tests of other packages run against the
// emulated CLB and VPC (EIPs, ENIs) through the real tencentcloud-sdk-go
// clients.
package emulatortest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common/profile"
	vpc "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc/v20170312"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// Start serves a new emulator on a loopback port for the duration of the
// test and returns it with its endpoint ("127.0.0.1:port").
func Start(t testing.TB, cfg emulator.Config) (*emulator.Emulator, string) {
	t.Helper()
	e, endpoint, err := emulator.Start(cfg)
	if err != nil {
		t.Fatalf("start emulator: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("close emulator: %v", err)
		}
	})
	return e, endpoint
}

// ClientProfile points the SDK at endpoint over plain HTTP, with English
// messages and a short timeout.
func ClientProfile(endpoint string) *profile.ClientProfile {
	cpf := profile.NewClientProfile()
	cpf.HttpProfile.Endpoint = endpoint
	cpf.HttpProfile.Scheme = "http"
	cpf.HttpProfile.ReqTimeout = 30
	cpf.Language = "en-US"
	return cpf
}

// Transport is a keep-alive transport sized for parallel clients; the
// SDK's default keeps only two idle connections per host.
func Transport() *http.Transport {
	return &http.Transport{
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second,
	}
}

// NewSDKClient returns a real CLB SDK client for endpoint, signed with the
// given key pair, in region.
func NewSDKClient(t testing.TB, endpoint, secretID, secretKey, region string) *clb.Client {
	t.Helper()
	return NewSDKClientWithProfile(t, common.NewCredential(secretID, secretKey), region, ClientProfile(endpoint))
}

// NewSDKClientWithProfile is NewSDKClient with an explicit credential and
// profile, e.g. to enable the SDK's rate-limit retries.
func NewSDKClientWithProfile(t testing.TB, cred common.CredentialIface, region string, cpf *profile.ClientProfile) *clb.Client {
	t.Helper()
	c, err := clb.NewClient(cred, region, cpf)
	if err != nil {
		t.Fatalf("new clb client: %v", err)
	}
	return c
}

// DefaultClient is NewSDKClient with the emulator's default key pair and region.
func DefaultClient(t testing.TB, endpoint string) *clb.Client {
	t.Helper()
	return NewSDKClient(t, endpoint, emulator.DefaultSecretID, emulator.DefaultSecretKey, emulator.DefaultRegion)
}

// ConsoleSecretID and ConsoleSecretKey are a second key pair, for tests
// that change the cloud behind a provider's back as a person at the
// console would: its calls are counted apart (Emulator.CallsBy) and the
// provider's CAM policy does not restrict them. WithPolicyFile adds it to
// a configuration.
const (
	ConsoleSecretID  = "AKIDLOCALCONSOLE00000000000000000000"
	ConsoleSecretKey = "localconsolesecretkey00000000000"
)

// ConsoleClient is NewSDKClient with the console key pair.
func ConsoleClient(t testing.TB, endpoint, region string) *clb.Client {
	t.Helper()
	return NewSDKClient(t, endpoint, ConsoleSecretID, ConsoleSecretKey, region)
}

// WithPolicyFile returns cfg accepting the default key pair, subject to
// the CAM policy document at path (the provider's key in tests), and the
// console key pair, unrestricted.
func WithPolicyFile(cfg emulator.Config, path string, provider emulator.Credential) (emulator.Config, error) {
	doc, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	p, err := emulator.ParseCAMPolicy(doc)
	if err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	cfg.Credentials = []emulator.Credential{{SecretID: emulator.DefaultSecretID, SecretKey: emulator.DefaultSecretKey},
		{SecretID: ConsoleSecretID, SecretKey: ConsoleSecretKey}}
	if provider.SecretID != emulator.DefaultSecretID {
		cfg.Credentials = append(cfg.Credentials, provider)
	}
	cfg.Policies = map[string]*emulator.CAMPolicy{provider.SecretID: p}
	return cfg, nil
}

// Refused returns, per action, the calls of secretID that its CAM policy
// refused (UnauthorizedOperation).
func Refused(e *emulator.Emulator, secretID string) map[string]int {
	out := map[string]int{}
	for action, codes := range e.CallsBy(secretID) {
		if n := codes["UnauthorizedOperation"]; n > 0 {
			out[action] = n
		}
	}
	return out
}

// NewVPCClient returns a real VPC SDK client (EIPs, ENIs) for endpoint,
// signed with the given key pair, in region. It shares the endpoint of
// the CLB client: the emulator serves both services.
func NewVPCClient(t testing.TB, endpoint, secretID, secretKey, region string) *vpc.Client {
	t.Helper()
	c, err := vpc.NewClient(common.NewCredential(secretID, secretKey), region, ClientProfile(endpoint))
	if err != nil {
		t.Fatalf("new vpc client: %v", err)
	}
	return c
}

// DefaultVPCClient is NewVPCClient with the emulator's default key pair and region.
func DefaultVPCClient(t testing.TB, endpoint string) *vpc.Client {
	t.Helper()
	return NewVPCClient(t, endpoint, emulator.DefaultSecretID, emulator.DefaultSecretKey, emulator.DefaultRegion)
}

// AddENI creates an ENI in the emulator's region holding ips (the first is
// its primary IP) and returns its id. With an instanceID, the instance's
// first ENI is its primary ENI, the one AssociateAddress by InstanceId
// binds to. An empty instanceID makes an ENI no instance holds (an EIP
// bound to it reports BIND_ENI).
func AddENI(t testing.TB, e *emulator.Emulator, instanceID string, ips ...string) string {
	t.Helper()
	id, err := e.AddENI("", instanceID, ips...)
	if err != nil {
		t.Fatalf("add ENI: %v", err)
	}
	return id
}

// ExistingLB creates an OPEN load balancer named name in region of e
// through the SDK, as one a user already has, and returns its id once it
// is up; each step is retried within wait.
func ExistingLB(t testing.TB, e *emulator.Emulator, region, name string, wait time.Duration) string {
	t.Helper()
	c := NewSDKClient(t, e.Endpoint(), emulator.DefaultSecretID, emulator.DefaultSecretKey, region)
	req := clb.NewCreateLoadBalancerRequest()
	req.LoadBalancerType, req.LoadBalancerName = common.StringPtr("OPEN"), common.StringPtr(name)
	var id string
	if err := testenv.Eventually(context.Background(), wait, func() error {
		resp, err := c.CreateLoadBalancer(req)
		if err != nil {
			return err
		}
		id = *resp.Response.LoadBalancerIds[0]
		return nil
	}); err != nil {
		t.Fatalf("create load balancer %s: %v", name, err)
	}
	if err := testenv.Eventually(context.Background(), wait, func() error {
		if lb, ok := e.Inventory().LoadBalancer(id); !ok || lb.Status != 1 {
			return fmt.Errorf("%+v", lb)
		}
		return nil
	}); err != nil {
		t.Fatalf("load balancer %s up: %v", name, err)
	}
	return id
}
