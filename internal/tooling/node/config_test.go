package node

import (
	"net/netip"
	"testing"

	"sigs.k8s.io/yaml"
)

// Pods get the cluster DNS and nothing else: the kubelet names DNSIP and
// no resolv.conf of the host it could copy an upstream server from.
func TestKubeletPointsPodsAtClusterDNS(t *testing.T) {
	n := &Node{dir: "/var/lib/ptn-node-test"}
	var cfg struct {
		ClusterDNS    []string `json:"clusterDNS"`
		ClusterDomain string   `json:"clusterDomain"`
		ResolvConf    *string  `json:"resolvConf"`
	}
	if err := yaml.Unmarshal([]byte(n.kubeletConfig()), &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.ClusterDNS) != 1 || cfg.ClusterDNS[0] != DNSIP {
		t.Errorf("clusterDNS %v, want [%s]", cfg.ClusterDNS, DNSIP)
	}
	if cfg.ClusterDomain != ClusterDomain {
		t.Errorf("clusterDomain %q, want %q", cfg.ClusterDomain, ClusterDomain)
	}
	if cfg.ResolvConf == nil || *cfg.ResolvConf != "" {
		t.Errorf("resolvConf %v, want it set to \"\"", cfg.ResolvConf)
	}
	if !ServiceCIDR().Contains(netip.MustParseAddr(DNSIP)) {
		t.Errorf("DNSIP %s is outside the Service range %s", DNSIP, ServiceCIDR())
	}
}
