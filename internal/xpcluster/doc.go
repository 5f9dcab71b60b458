// Package xpcluster installs Crossplane core v2.4.0 into a cluster the way
// users do, from its own Helm chart, on the project's single local node:
// the image is built here from the core binary cluster/local/crossplane.sh
// caches and pushed to a registry on loopback, and the chart is rendered by
// the cached program cluster/local/crossplane/chart (Helm stays out of this
// module) and applied with server-side apply.
//
// The node's API server listens on 127.0.0.1 only, so both Crossplane Pods
// run with hostNetwork and in-cluster config pointed at it; they then share
// the host's ports with each other and with everything else on the node,
// which is why every port they bind is chosen here (see Ports).
//
// xplocal, by contrast, runs core as local processes next to a control
// plane that has no kubelet.
package xpcluster
