package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The components' configuration files, written into the node's folder.
// Settings that differ from the defaults are explained where they are set.

func (n *Node) path(elem ...string) string { return filepath.Join(append([]string{n.dir}, elem...)...) }

func (n *Node) socket() string { return n.path("containerd", "containerd.sock") }

func (n *Node) writeConfigs() error {
	files := map[string]string{
		"containerd/config.toml":    n.containerdConfig(),
		"cni/net.d/10-ptn.conflist": n.cniConfig(),
		"kubelet.yaml":              n.kubeletConfig(),
		"kube-proxy.yaml":           n.proxyConfig(),
		"kubeconfig":                string(n.opts.Env.KubeConfig),
		"ca.crt":                    string(n.opts.Env.Config.CAData),
		"certs.d/" + n.Registry() + "/hosts.toml": registryHosts(n.Registry()),
	}
	for name, content := range files {
		p := n.path(name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// containerdConfig: every path under the node's folder, so a stopped or
// killed node is found and removed by that folder alone.
//   - restrict_oom_score_adj: this sandbox drops CAP_SYS_RESOURCE, and runc
//     cannot lower a container's oom_score_adj without it.
//   - SystemdCgroup off: no systemd runs here.
//   - registry config_path: the loopback registry is plain HTTP.
func (n *Node) containerdConfig() string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      SystemdCgroup = false
      Root = %[6]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[7]q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[8]q
`, n.path("containerd", "root"), n.path("containerd", "state"), n.socket(), n.path("containerd", "ttrpc.sock"),
		n.PauseImage(), n.path("runc"), n.path("cni", "net.d"), n.path("certs.d"))
}

// registryHosts lets containerd pull from a plain-HTTP registry on loopback.
func registryHosts(registry string) string {
	return fmt.Sprintf(`server = "http://%[1]s"

[host."http://%[1]s"]
  capabilities = ["pull", "resolve"]
`, registry)
}

// cniConfig: a bridge with host-local addresses (kept in the node's folder)
// from the node's subnets, one IPv4 and one IPv6 address per Pod.
// No masquerading and routes to the Pod ranges, the Service range and the
// node's IP (its registry, the emulated cloud) only: a Pod has no route to
// any other address, so nothing it sends can leave the machine.
func (n *Node) cniConfig() string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "ptn",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": %q,
        "ranges": [[{"subnet": %q}], [{"subnet": %q}]],
        "routes": [{"dst": %q}, {"dst": %q}, {"dst": %q}, {"dst": %q}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
`, Bridge, n.path("cni", "ipam"), NodePodCIDR().String(), NodePodCIDR6().String(),
		PodCIDR().String(), PodCIDR6().String(), ServiceCIDR().String(), IP().String()+"/32")
}

// kubeletConfig:
//   - failCgroupV1 off: this machine mixes cgroup v1 controllers with v2.
//   - cgroupfs, no QoS cgroups and no node allocatable: no systemd, and the
//     node shares the machine with builds.
//   - no eviction and image GC only at a full disk, for the same reason.
//   - resolvConf "": Pods get no upstream resolver to send queries to;
//     ClusterFirst Pods get the cluster DNS (internal/tooling/clusterdns) only.
//   - the API server's port (logs, exec) on the node's IP, the others on
//     loopback.
func (n *Node) kubeletConfig() string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
containerRuntimeEndpoint: unix://%[1]s
address: %[7]s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
podCIDR: %[2]s
evictionHard: {}
evictionSoft: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
resolvConf: ""
clusterDNS: [%[5]s]
clusterDomain: %[6]s
podLogsDir: %[3]q
serializeImagePulls: false
protectKernelDefaults: false
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %[4]q
authorization:
  mode: Webhook
`, n.socket(), NodePodCIDR(), n.path("pod-logs"), n.path("ca.crt"), DNSIP, ClusterDomain, IP())
}

// proxyConfig: iptables mode; conntrack and route_localnet left as they
// are (no sysctl changed on the machine); NodePorts only on the node's IP.
func (n *Node) proxyConfig() string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %[1]q
mode: iptables
clusterCIDR: %[2]s
hostnameOverride: %[3]s
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: [%[4]s/32]
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  localhostNodePorts: false
`, n.path("kubeconfig"), clusterCIDRs(), Name, IP())
}

// args of the control-plane components that run beside the kubelet.
func (n *Node) controllerManagerArgs() []string {
	return []string{
		"--kubeconfig=" + n.path("kubeconfig"),
		"--service-account-private-key-file=" + filepath.Join(n.opts.Env.CertDir(), "sa-signer.key"),
		"--root-ca-file=" + n.path("ca.crt"),
		"--controllers=*",
		"--cluster-cidr=" + clusterCIDRs(),
		"--node-cidr-mask-size-ipv4=" + strconv.Itoa(NodePodCIDR().Bits()),
		"--node-cidr-mask-size-ipv6=" + strconv.Itoa(NodePodCIDR6().Bits()),
		"--service-cluster-ip-range=" + ServiceCIDR().String(),
		"--use-service-account-credentials=true",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=0",
	}
}

// clusterCIDRs is the dual-stack Pod range, IPv4 first as the node's IP.
func clusterCIDRs() string { return PodCIDR().String() + "," + PodCIDR6().String() }

func (n *Node) schedulerArgs() []string {
	return []string{"--kubeconfig=" + n.path("kubeconfig"), "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0"}
}

func (n *Node) kubeletArgs() []string {
	return []string{
		"--config=" + n.path("kubelet.yaml"),
		"--kubeconfig=" + n.path("kubeconfig"),
		"--root-dir=" + n.path("kubelet"),
		"--hostname-override=" + Name,
		"--node-ip=" + IP().String(),
		"--v=1",
	}
}

func (n *Node) proxyArgs() []string {
	return []string{"--config=" + n.path("kube-proxy.yaml"), "--v=1"}
}

// env of every component: no proxy settings of the machine apply here.
func componentEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(strings.ToLower(k), "_proxy") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
