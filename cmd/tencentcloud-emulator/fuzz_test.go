package main

import (
	"io"
	"math"
	"strings"
	"testing"
)

// FuzzParseFlags: any command line either fails or gives a configuration
// that carries the flags given: the key pair and token, and every
// explicitly set tuning value over the profile's.
func FuzzParseFlags(f *testing.F) {
	for _, s := range []string{
		"", "--profile=realistic", "--profile=fast", "--latency=50ms --task-duration=0", "--rate-limit=-1",
		"--listener-quota=x", "--token=t --secret-key=k", "--listen=127.0.0.1:0 extra", "-h", "--latency=-1s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		o, set, err := parseFlags(strings.Fields(line), io.Discard)
		if err != nil {
			return
		}
		cfg, err := o.config(set)
		if err != nil {
			if o.profile == "default" || o.profile == "realistic" {
				t.Fatalf("%q: profile %q refused: %v", line, o.profile, err)
			}
			return
		}
		c := cfg.Credentials
		if len(c) != 1 || c[0].SecretID != o.secretID || c[0].SecretKey != o.secretKey || c[0].Token != o.token {
			t.Fatalf("%q: credentials %+v, flags %+v", line, c, o)
		}
		if set["latency"] && cfg.Latency != o.latency || set["task-duration"] && cfg.TaskDuration != o.taskDuration ||
			set["listener-quota"] && cfg.ListenerQuota != o.listenerQuota || set["rate-limit"] && cfg.RateLimit != o.rateLimit && !math.IsNaN(o.rateLimit) {
			t.Fatalf("%q: an explicit flag lost to the profile: %+v", line, cfg)
		}
	})
}
