package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--poll", "30s", "--max-reconcile-rate", "50", "--leader-election"})
	if err != nil {
		t.Fatal(err)
	}
	if o.pollInterval != 30*time.Second || o.maxReconcileRate != 50 || !o.leaderElection || !o.managementPolicies {
		t.Errorf("parseFlags: got %+v", o)
	}
	if o.targetAudit != 5*time.Minute {
		t.Errorf("--target-audit-interval defaults to %s, want 5m", o.targetAudit)
	}
	if o, err := parseFlags([]string{"--target-audit-interval", "0"}); err != nil || o.targetAudit != 0 {
		t.Errorf("--target-audit-interval 0 (disabled): got %s, %v", o.targetAudit, err)
	}
	for _, bad := range [][]string{
		{"--max-reconcile-rate", "0"},
		{"--poll", "10ms"},
		{"--target-audit-interval", "-1s"},
		{"--no-such-flag"},
	} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%s): want an error", strings.Join(bad, " "))
		}
	}
}
