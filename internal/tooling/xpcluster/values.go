package xpcluster

// Release is where the chart is installed: the namespace and release name
// Crossplane's docs use, which its templates also name objects after.
const (
	Namespace = "crossplane-system"
	Release   = "crossplane"
)

// Options say how Crossplane runs on the node.
type Options struct {
	// Activations are the patterns of the default
	// ManagedResourceActivationPolicy; nil keeps the chart's ["*"].
	Activations []string
}

// Values are the chart values for the node: only the image differs from
// the chart's defaults (Crossplane's Pods are on the Pod network and reach
// the API server through the kubernetes Service, as in any cluster). image
// is a digest reference, so IfNotPresent never runs a stale image under a
// reused tag.
func Values(image string, o Options) map[string]any {
	v := map[string]any{
		"image": map[string]any{
			"repository": image,
			"ignoreTag":  true,
			"pullPolicy": "IfNotPresent",
		},
	}
	if o.Activations != nil {
		v["provider"] = map[string]any{"defaultActivations": o.Activations}
	}
	return v
}
