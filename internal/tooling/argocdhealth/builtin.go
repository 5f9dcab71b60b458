package argocdhealth

import "slices"

// BuiltIn is the health Argo CD shows for an object of a group under
// crossplane.io when argocd-cm has no script for its kind: what a user who
// pastes none of ours gets. It is written here from Argo CD's behaviour
// (v3.2.0, which test/gitops runs), not run from Argo CD's script:
//
//   - Any object with a deletionTimestamp is Progressing ("Pending
//     deletion"): gitops-engine decides that before it looks for a script,
//     unless the object carries Argo CD's hook finalizer.
//   - Then the built-in script for "*.crossplane.io/*"
//     (resource_customizations/_.crossplane.io/_/health.lua). An object
//     with no status at all is Healthy, whatever its kind (its first test
//     reads `status == nil or (empty and a kind without status)`). An
//     empty status is Healthy for the kinds that have none (Composition,
//     ProviderConfig, …), else Progressing; a status without conditions is
//     Progressing, except a (Cluster)ProviderConfig with users (Healthy).
//   - Conditions are read in order, and the first that decides wins: a
//     `Synced` or `LastAsyncOperation` that is False makes it Degraded with
//     that condition's message; a True `Ready`, `Healthy`, `Offered`,
//     `Established`, `ValidPipeline` or `RevisionHealthy` makes it Healthy;
//     with neither it is Progressing. So a Synced=False listed after a
//     True Ready reads Healthy: the provider lists Synced first. (From
//     v3.3 a False Synced anywhere wins; an object right here is right
//     there.)
//
// It cannot say Suspended.
func BuiltIn(obj map[string]any) Status {
	if s, ok := PendingDeletion(obj); ok {
		return s
	}
	upToDate := Status{Healthy, "Resource is up-to-date."}
	provisioning := Status{Progressing, "Provisioning ..."}
	kind, _ := obj["kind"].(string)
	status, _ := obj["status"].(map[string]any)
	if status == nil {
		return upToDate
	}
	if len(status) == 0 && slices.Contains(kindsWithoutStatus(), kind) {
		return upToDate
	}
	conditions, ok := status["conditions"].([]any)
	if len(status) == 0 || !ok {
		if (kind == "ProviderConfig" || kind == "ClusterProviderConfig") && status["users"] != nil {
			return Status{Healthy, "Resource is in use."}
		}
		return provisioning
	}
	for _, e := range conditions {
		c, _ := e.(map[string]any)
		typ, _ := c["type"].(string)
		st, _ := c["status"].(string)
		switch {
		case (typ == "Synced" || typ == "LastAsyncOperation") && st == "False":
			msg, _ := c["message"].(string)
			return Status{Degraded, msg}
		case slices.Contains(healthyConditionTypes(), typ) && st == "True":
			return upToDate
		}
	}
	return provisioning
}

// PendingDeletion is what gitops-engine shows for an object being deleted
// (Progressing, "Pending deletion") before it looks for any script,
// built-in or from argocd-cm, unless Argo CD's hook finalizer is on it.
func PendingDeletion(obj map[string]any) (Status, bool) {
	meta, _ := obj["metadata"].(map[string]any)
	if meta["deletionTimestamp"] != nil && !hasHookFinalizer(meta) {
		return Status{Progressing, "Pending deletion"}, true
	}
	return Status{}, false
}

// Shown is the health Argo CD shows for obj when argocd-cm gives its kind
// script: PendingDeletion first, then the script.
func Shown(script string, obj map[string]any) (Status, error) {
	if s, ok := PendingDeletion(obj); ok {
		return s, nil
	}
	return Assess(script, obj)
}

// kindsWithoutStatus are the kinds the built-in check takes as Healthy with
// an empty status.
func kindsWithoutStatus() []string {
	return []string{
		"Composition", "CompositionRevision", "DeploymentRuntimeConfig", "ClusterProviderConfig",
		"ProviderConfig", "ProviderConfigUsage", "ControllerConfig",
	}
}

// healthyConditionTypes are the condition types whose True means Healthy.
func healthyConditionTypes() []string {
	return []string{"Ready", "Healthy", "Offered", "Established", "ValidPipeline", "RevisionHealthy"}
}

// hasHookFinalizer reports whether Argo CD's hook finalizer is on the
// object; Argo CD then assesses a deleted object as any other.
func hasHookFinalizer(meta map[string]any) bool {
	fs, _ := meta["finalizers"].([]any)
	return slices.Contains(fs, any("argocd.argoproj.io/hook-finalizer"))
}

// BuiltInNotYetRight are the recorded objects (RecordedName) the built-in
// check still gets wrong, with why. TestBuiltInOnRecordedObjects and the
// live capture of test/argocdhealth skip them and fail once one turns
// right, so the list only shrinks. Issue 24's acceptance allows only
// Suspended: this list is unfinished work, not accepted exceptions.
func BuiltInNotYetRight() map[string]string {
	return map[string]string{
		"workload.tencentcloud.crossplane.io_DedicatedCLBService/Progressing-not-composed-yet.yaml": "an XR before Crossplane core's first reconcile has no status, which the built-in check reads as Healthy; " +
			"the API server drops status on create and Crossplane's CRD renderer does not carry a default for status, so nothing of ours can set one",
	}
}

// RecordedName is where an object of kind k that has health status at
// moment is recorded under testdata: "<group>_<Kind>/<status>-<moment>.yaml".
func RecordedName(k Kind, status, moment string) string {
	return k.Group + "_" + k.Kind + "/" + status + "-" + moment + ".yaml"
}
