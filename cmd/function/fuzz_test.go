package main

import (
	"strings"
	"testing"
)

// FuzzParseFlags: any command line either fails or serves with mutual TLS
// certificates or explicitly without TLS.
func FuzzParseFlags(f *testing.F) {
	for _, s := range []string{"", "--insecure", "--tls-certs-dir=/tls", "--tls-certs-dir=", "--insecure=false --tls-certs-dir=/x", "--network=unix --address=/tmp/s", "-h", "--debug=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		o, err := parseFlags(strings.Fields(line))
		if err == nil && !o.insecure && o.certsDir == "" {
			t.Fatalf("parseFlags(%q) serves without TLS and without --insecure: %+v", line, o)
		}
	})
}
