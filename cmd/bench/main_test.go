package main

import (
	"slices"
	"testing"
)

func TestModeFlag(t *testing.T) {
	var m modes
	if err := m.Set("rate100=--max-reconcile-rate=100 --poll=30s"); err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || m[0].Name != "rate100" || m[0].Policy != "LeastUsed" || !slices.Equal(m[0].Flags, []string{"--max-reconcile-rate=100", "--poll=30s"}) {
		t.Errorf("parsed %+v", m)
	}
	if err := m.Set("fast:InOrder=--target-batch-window=50ms"); err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m[1].Name != "fast" || m[1].Policy != "InOrder" || !slices.Equal(m[1].Flags, []string{"--target-batch-window=50ms"}) {
		t.Errorf("parsed %+v", m)
	}
	for _, bad := range []string{"no-equals", "=--flag", "x:Random=--flag", ":InOrder=--flag"} {
		if err := m.Set(bad); err == nil {
			t.Errorf("Set(%q) did not fail", bad)
		}
	}
}

// TestCommandLine: the report names the command a reader can paste.
func TestCommandLine(t *testing.T) {
	got := commandLine([]string{"-pods", "5000", "-mode", "max-wait-2s=--target-batch-max-wait=2s --x=1", "-out", ""})
	want := "go run ./cmd/bench -pods 5000 -mode 'max-wait-2s=--target-batch-max-wait=2s --x=1' -out ''"
	if got != want {
		t.Errorf("commandLine = %q, want %q", got, want)
	}
}
