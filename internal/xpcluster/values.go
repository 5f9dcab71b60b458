package xpcluster

import (
	"fmt"
	"strconv"
)

// Release is where the chart is installed: the namespace and release name
// Crossplane's docs use, which its templates also name objects after.
const (
	Namespace = "crossplane-system"
	Release   = "crossplane"
)

// RBACManagerMetricsPort is the one port Crossplane binds that no setting
// moves: `crossplane rbac start` builds its manager without a metrics
// address (cmd/crossplane/rbac/rbac.go:77-86 in v2.4.0), so
// controller-runtime's default ":8080" applies, on every interface. The
// chart's metrics.enabled only declares the port; it does not unbind it.
const RBACManagerMetricsPort = 8080

// Ports are the host ports Crossplane core binds. Under hostNetwork they are
// the node's ports, so they must differ from the RBAC manager's 8080, from
// the provider's webhook on 9443, and from anything else on the node.
type Ports struct {
	// Webhook is core's admission and conversion webhook server (default
	// 9443, WEBHOOK_PORT).
	Webhook int
	// Metrics is core's Prometheus endpoint (default 8080, METRICS_PORT).
	// It cannot be switched off: METRICS_PORT=0 becomes the address ":0",
	// a random port, because only the bare "0" disables it.
	Metrics int
	// Health serves /healthz and /readyz (default 8081, HEALTH_PROBE_PORT).
	Health int
}

// DefaultPorts are off every default of Crossplane and of controller-runtime
// (8080, 8081, 9443), so core meets neither its RBAC manager nor a provider
// left at its defaults.
func DefaultPorts() Ports { return Ports{Webhook: 9444, Metrics: 8088, Health: 8089} }

// Options say how Crossplane runs on the node.
type Options struct {
	// APIServerHost and APIServerPort are where in-cluster config points
	// (KUBERNETES_SERVICE_HOST/PORT): the node's API server on loopback,
	// whose serving certificate names 127.0.0.1.
	APIServerHost string
	APIServerPort int
	// Ports are core's; zero fields take DefaultPorts.
	Ports Ports
	// NoWebhooks runs core without its webhook server. Webhooks need the
	// API server to reach core through the crossplane-webhooks Service,
	// that is a Service IP routed by kube-proxy to the node's address.
	NoWebhooks bool
	// Activations are the patterns of the default
	// ManagedResourceActivationPolicy; nil keeps the chart's ["*"].
	Activations []string
}

func (o Options) ports() Ports {
	p, d := o.Ports, DefaultPorts()
	if p.Webhook == 0 {
		p.Webhook = d.Webhook
	}
	if p.Metrics == 0 {
		p.Metrics = d.Metrics
	}
	if p.Health == 0 {
		p.Health = d.Health
	}
	return p
}

// HostPorts returns every host port the two Crossplane Pods bind, with who
// binds it, or an error if two of them are the same port.
func HostPorts(o Options) (map[int]string, error) {
	p := o.ports()
	bound := []struct {
		port int
		who  string
	}{
		{p.Metrics, "core metrics"},
		{p.Health, "core health probes"},
		{RBACManagerMetricsPort, "RBAC manager metrics"},
	}
	if !o.NoWebhooks {
		bound = append(bound, struct {
			port int
			who  string
		}{p.Webhook, "core webhooks"})
	}
	out := map[int]string{}
	for _, b := range bound {
		if other, ok := out[b.port]; ok {
			return nil, fmt.Errorf("port %d is bound by both %s and %s", b.port, other, b.who)
		}
		out[b.port] = b.who
	}
	return out, nil
}

// Env is the in-cluster config every Crossplane container gets. Explicit
// container env wins over the variables the kubelet derives from the
// default/kubernetes Service.
func (o Options) Env() map[string]string {
	return map[string]string{
		"KUBERNETES_SERVICE_HOST": o.APIServerHost,
		"KUBERNETES_SERVICE_PORT": strconv.Itoa(o.APIServerPort),
	}
}

// Values are the chart values for the local node, with image the full
// reference of Crossplane's image (a digest reference, so IfNotPresent
// never runs a stale image under a reused tag). What the chart has no
// value for (the RBAC manager's hostNetwork and its init container's env)
// Render patches into the rendered objects.
func Values(image string, o Options) (map[string]any, error) {
	if o.APIServerHost == "" || o.APIServerPort == 0 {
		return nil, fmt.Errorf("the API server's host and port are required")
	}
	if _, err := HostPorts(o); err != nil {
		return nil, err
	}
	p := o.ports()
	env := map[string]any{}
	for k, v := range o.Env() {
		env[k] = v
	}
	v := map[string]any{
		"image": map[string]any{
			"repository": image,
			"ignoreTag":  true,
			"pullPolicy": "IfNotPresent",
		},
		"hostNetwork": true,
		// Under hostNetwork every declared containerPort is a hostPort, so a
		// rolling update's new Pod could never be scheduled beside the old.
		"deploymentStrategy": "Recreate",
		"webhooks":           map[string]any{"enabled": !o.NoWebhooks, "port": p.Webhook},
		// enabled declares the metrics ports on both Pods (the RBAC
		// manager's is its fixed 8080), so the scheduler sees every bound
		// host port; the chart sets METRICS_PORT only when enabled.
		"metrics":                    map[string]any{"enabled": true, "port": p.Metrics},
		"readiness":                  map[string]any{"port": p.Health},
		"extraEnvVarsCrossplane":     env,
		"extraEnvVarsCrossplaneInit": env,
		"extraEnvVarsRBACManager":    env,
	}
	if o.Activations != nil {
		v["provider"] = map[string]any{"defaultActivations": o.Activations}
	}
	return v, nil
}
