// Package argocdhealth is the Argo CD health assessment of every kind of
// the provider and of the composites its Configuration package defines:
// Lua scripts kept as files under docs/argocd/health, the table of which
// kind uses which, the argocd-cm snippet made from them, and an evaluator
// that runs a script the way Argo CD does.
package argocdhealth

// ScriptDir holds the scripts, relative to the repository root.
const ScriptDir = "docs/argocd/health"

// A Kind is one kind and the script that assesses it.
type Kind struct {
	Group  string
	Kind   string
	Script string
}

// Key is how Argo CD names the kind in resource.customizations:
// "<group>/<Kind>".
func (k Kind) Key() string { return k.Group + "/" + k.Kind }

// Scripts, one per behaviour.
const (
	ScriptProviderConfig   = "providerconfig.lua"
	ScriptManaged          = "managed.lua"
	ScriptPortPool         = "portpool.lua"
	ScriptPodAddress       = "podaddress.lua"
	ScriptPodAddressPolicy = "podaddresspolicy.lua"
	ScriptComposite        = "composite.lua"
	ScriptNetPool          = "netpool.lua"
	ScriptNetIPClaim       = "netipclaim.lua"
	ScriptRemotePod        = "remotepod.lua"
	ScriptWorkloadCluster  = "workloadcluster.lua"
	ScriptCLBPortPool      = "clbportpool.lua"
)

// Groups of the composites and claims (package/configuration).
const (
	GroupComposite = "workload.tencentcloud.crossplane.io"
	GroupLegacy    = "claims.workload.tencentcloud.crossplane.io"
)

// Kinds returns every kind with a health script. Keys are exact: Argo CD
// prefers an exact key over any wildcard (such as the "*.crossplane.io/*"
// entry Crossplane's guide suggests), and wildcard keys are matched in no
// defined order when several fit.
func Kinds() []Kind {
	return []Kind{
		{"tencentcloud.m.crossplane.io", "ProviderConfig", ScriptProviderConfig},
		{"tencentcloud.crossplane.io", "ClusterProviderConfig", ScriptProviderConfig},
		{"clb.tencentcloud.m.crossplane.io", "LoadBalancer", ScriptManaged},
		{"clb.tencentcloud.m.crossplane.io", "Listener", ScriptManaged},
		{"clb.tencentcloud.m.crossplane.io", "Rule", ScriptManaged},
		{"clb.tencentcloud.m.crossplane.io", "TargetSet", ScriptManaged},
		{"clb.tencentcloud.m.crossplane.io", "PortPool", ScriptPortPool},
		{"vpc.tencentcloud.m.crossplane.io", "Address", ScriptManaged},
		{"network.tencentcloud.m.crossplane.io", "PodAddress", ScriptPodAddress},
		{"network.tencentcloud.m.crossplane.io", "PodAddressPolicy", ScriptPodAddressPolicy},
		{"network.tencentcloud.m.crossplane.io", "NetPool", ScriptNetPool},
		{"network.tencentcloud.m.crossplane.io", "NetIPClaim", ScriptNetIPClaim},
		{"network.tencentcloud.m.crossplane.io", "RemotePod", ScriptRemotePod},
		{"network.tencentcloud.m.crossplane.io", "WorkloadCluster", ScriptWorkloadCluster},
		{"networking.cloud.tencent.com", "CLBPortPool", ScriptCLBPortPool},
		// Crossplane v2 namespaced composites.
		{GroupComposite, "PodPublicAddress", ScriptComposite},
		{GroupComposite, "DedicatedCLBService", ScriptComposite},
		{GroupComposite, "Ingress", ScriptComposite},
		// Legacy cluster-scoped composites and their claims.
		{GroupLegacy, "XPodPublicAddress", ScriptComposite},
		{GroupLegacy, "PodPublicAddress", ScriptComposite},
		{GroupLegacy, "XDedicatedCLBService", ScriptComposite},
		{GroupLegacy, "DedicatedCLBService", ScriptComposite},
		{GroupLegacy, "XIngress", ScriptComposite},
		{GroupLegacy, "Ingress", ScriptComposite},
	}
}

// WithoutHealth returns our kinds that have no script, and why.
func WithoutHealth() map[string]string {
	return map[string]string{
		"tencentcloud.m.crossplane.io/ProviderConfigUsage": "the provider creates it to track which resources use a config; it has no status and is never in Git",
		"network.tencentcloud.m.crossplane.io/NetIP":       "the provider creates one per IP of a NetPool; it is never in Git",
		"network.tencentcloud.m.crossplane.io/EIPGrant":    "an admin's limits, in force as written; its status only counts the EIPs handed out",
		"networking.cloud.tencent.com/CLBPodBinding":       "the provider writes it from a PodAddress, whose script assesses the same state; it is never in Git",
		"networking.cloud.tencent.com/CLBNodeBinding":      "served so that tke-extend's objects stay valid; the provider writes none",
	}
}

// Lookup returns the kind of group and kind.
func Lookup(group, kind string) (Kind, bool) {
	for _, k := range Kinds() {
		if k.Group == group && k.Kind == kind {
			return k, true
		}
	}
	return Kind{}, false
}
