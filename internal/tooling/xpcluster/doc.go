// Package xpcluster installs Crossplane core v2.4.0 into a cluster the way
// users do, from its own Helm chart, on the project's single local node:
// the image is built here from the core binary cluster/local/crossplane.sh
// caches and pushed to the node's registry, and the chart is rendered by
// the cached program cluster/local/crossplane/chart (Helm stays out of this
// module) and applied with server-side apply.
//
// Its Pods run on the Pod network with the chart's defaults and reach the
// API server through the kubernetes Service, as in any cluster.
//
// xplocal, by contrast, runs core as local processes next to a control
// plane that has no kubelet.
package xpcluster
