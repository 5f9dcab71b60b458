// Package node runs a real single-node Kubernetes worker on this machine,
// beside the local control plane of internal/tooling/testenv: Debian's containerd
// and runc with a CNI bridge, and kubelet, kube-controller-manager,
// kube-scheduler and kube-proxy built from the same Kubernetes module as the
// API server (cluster/local/install-node.sh). Pods really run, get their own
// IPs on the bridge, one IPv4 and one IPv6 (a dual-stack Pod range, the
// Service range IPv4 only), and are scheduled, recreated and
// garbage-collected by the real controllers.
//
// It needs Linux and root. The machine's default routes leave the host, so
// before anything starts the Pod ranges of both families and the Service
// range are routed to a local device and `ip route get` must confirm that
// no address of any of them can leave; forwarded traffic from the bridge
// to any other interface is dropped in both families. Stop removes every process, container, mount, network namespace,
// device, route and iptables rule it made, and a node killed mid-run is
// swept the same way when the next one starts (everything it made lives
// under one folder and the fixed names below).
package node
