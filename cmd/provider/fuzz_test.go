package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

// FuzzParseFlags: any command line either fails or gives options within
// the bounds run relies on (workers, rates and intervals it divides or
// ticks by).
func FuzzParseFlags(f *testing.F) {
	for _, s := range []string{
		"", "--debug", "--poll=30s --sync=1h", "--poll=1ms", "--poll=abc", "--max-reconcile-rate=0",
		"--max-reconcile-rate=-5", "--api-rate=0", "--api-rate=NaN", "--api-rate=-Inf", "--api-rate=+Inf",
		"--target-audit-interval=-1s", "--target-batch-window=0", "--leader-election=maybe", "stray-arg", "-h",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		o, err := parseFlags(strings.Fields(line))
		if err != nil {
			return
		}
		if o.maxReconcileRate < 1 || !(o.apiRate > 0) || math.IsInf(o.apiRate, 1) || o.targetAudit < 0 || o.pollInterval < time.Second {
			t.Fatalf("parseFlags(%q) accepted %+v", line, o)
		}
	})
}
