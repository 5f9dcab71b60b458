package integration

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
)

// policyActions returns the actions README's CAM policy allows, without
// the service prefix ("clb:", "vpc:", "tag:", "cam:"). The document is the provider's least privilege: one
// allow statement, every action named in full, on every resource.
func policyActions(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(suite.CAMPolicyFile())
	if err != nil {
		t.Fatal(err)
	}
	p, err := emulator.ParseCAMPolicy(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Statement) != 1 || p.Statement[0].Effect != "allow" || !slices.Equal(p.Statement[0].Resource, []string{"*"}) {
		t.Fatalf("want one allow statement on resource *, got %+v", p.Statement)
	}
	var out []string
	for _, a := range p.Statement[0].Action {
		service, name, ok := strings.Cut(a, ":")
		if !ok || (service != "clb" && service != "vpc" && service != "tag" && service != "cam") || strings.Contains(name, "*") {
			t.Fatalf("action %q: want clb:<Action>, vpc:<Action>, tag:<Action> or cam:<Action> in full, no wildcard", a)
		}
		out = append(out, name)
	}
	return out
}

// TestCAMPolicyIsExactlyWhatTheProviderCalls runs the managed resources'
// lifecycles (CLB and EIP) and a PortPool on a load balancer (the tests of
// the same names) with the emulator enforcing README's CAM policy on the provider's
// key, as every test of this package does. The actions the provider
// called must be exactly the policy's: none refused (the policy is
// enough), and every one of them called (so removing any single action
// makes one of these flows fail with UnauthorizedOperation). The tests
// change the cloud behind the provider's back with a key of their own,
// counted apart.
//
// It runs first in this package (cam_test.go sorts first), before other
// tests' objects keep the provider busy or fill its quota cache.
func TestCAMPolicyIsExactlyWhatTheProviderCalls(t *testing.T) {
	want := policyActions(t)
	before := cloud.CallsBy(testenv.SessionSecretID)
	for _, f := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"LoadBalancer", TestLoadBalancerLifecycle},
		{"Listener", TestListenerLifecycle},
		{"Rule", TestRuleLifecycle},
		{"TargetSet", TestTargetSetLifecycle},
		{"PortPool", TestPortPoolOverTwoLoadBalancers},
		{"Address", TestAddressLifecycle},
	} {
		if !t.Run(f.name, f.run) {
			t.FailNow()
		}
	}
	called := map[string]bool{}
	for action, codes := range cloud.CallsBy(testenv.SessionSecretID) {
		for code, n := range codes {
			if n == before[action][code] {
				continue
			}
			called[action] = true
			if code == "UnauthorizedOperation" {
				t.Errorf("the policy refused %d %s calls of the provider", n-before[action][code], action)
			}
		}
	}
	got := slices.Sorted(maps.Keys(called))
	for _, a := range got {
		if !slices.Contains(want, a) {
			t.Errorf("the provider called %s, which the policy does not allow", a)
		}
	}
	for _, a := range want {
		if !called[a] && !tkeSwitchOnly[a] {
			t.Errorf("the policy allows %s, which none of the flows called: not least privilege, or a flow is missing", a)
		}
	}
	t.Logf("%d actions called, %d in the policy: %v", len(got), len(want), got)
}

// tkeSwitchOnly are the actions of the policy only a switch from
// tke-extend-network-controller calls (tagging the load balancers it
// created): test/podaddress's TestSwitchFromTKEExtend, under the same
// policy, fails without them.
var tkeSwitchOnly = map[string]bool{"GetUserAppId": true, "TagResources": true}

// TestREADMEShowsTheCAMPolicy keeps README's policy and the committed file
// one document: README quotes the file verbatim.
func TestREADMEShowsTheCAMPolicy(t *testing.T) {
	doc, err := os.ReadFile(suite.CAMPolicyFile())
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```json\n"+string(doc)+"```\n") {
		t.Errorf("README.md does not quote %s verbatim in a json block; paste the file's content there", suite.CAMPolicyFile())
	}
}
