package clients

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCAMPolicyNamesEverySDKAction reads the source of the service
// clients: every action the CLB and VPC clients can send (the CLB client's
// tag and cam calls included) is in the CAM
// policy README documents (examples/providerconfig/cam-policy.json), and
// the policy names nothing else. The controllers, the PodAddress binder and
// the webhook reach the cloud only through these clients. That the flows
// call each one is test/integration's
// TestCAMPolicyIsExactlyWhatTheProviderCalls.
func TestCAMPolicyNamesEverySDKAction(t *testing.T) {
	call := regexp.MustCompile(`\.sdk\.([A-Za-z]+)WithContext\b`)
	// Calls of other services through the SDK's common client (clb/tag.go).
	common := regexp.MustCompile(`\.sendCommon\(ctx, op, "([a-z]+)", "[0-9-]+", "([A-Za-z]+)"`)
	var sent []string
	for _, service := range []string{"clb", "vpc"} {
		files, err := filepath.Glob(filepath.Join(service, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range call.FindAllStringSubmatch(string(src), -1) {
				sent = append(sent, service+":"+m[1])
			}
			for _, m := range common.FindAllStringSubmatch(string(src), -1) {
				sent = append(sent, m[1]+":"+m[2])
			}
		}
	}
	slices.Sort(sent)
	sent = slices.Compact(sent)

	doc, err := os.ReadFile(filepath.Join("..", "..", "examples", "providerconfig", "cam-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	var policy struct {
		Statement []struct {
			Action []string `json:"action"`
		} `json:"statement"`
	}
	if err := json.Unmarshal(doc, &policy); err != nil {
		t.Fatal(err)
	}
	var allowed []string
	for _, s := range policy.Statement {
		allowed = append(allowed, s.Action...)
	}
	slices.Sort(allowed)
	if len(sent) < 10 || !slices.Equal(sent, allowed) {
		t.Errorf("the client sends %v,\nthe CAM policy allows %v", sent, allowed)
	}
}
