package node

// DNSIP is the ClusterIP of the cluster DNS Service (internal/tooling/clusterdns)
// and the nameserver the kubelet gives Pods. It is in the low part of the
// Service range, which the API server hands out last on its own.
const DNSIP = "10.0.0.10"

// ClusterDomain is the DNS domain of Services and Pods.
const ClusterDomain = "cluster.local"
