package workloadcluster

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// gauges are the per-cluster metrics, labelled by the WorkloadCluster's
// namespace and name.
type gauges struct {
	connected *prometheus.GaugeVec
	pods      *prometheus.GaugeVec
	served    *prometheus.GaugeVec
	heartbeat *prometheus.GaugeVec
}

func newGauges(reg prometheus.Registerer) *gauges {
	vec := func(name, help string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"namespace", "name"})
		if err := reg.Register(g); err != nil {
			// Several controllers in one process (tests) share the first.
			if are, ok := err.(prometheus.AlreadyRegisteredError); ok { //nolint:errorlint // Register returns this type unwrapped.
				if existing, ok := are.ExistingCollector.(*prometheus.GaugeVec); ok {
					return existing
				}
			}
		}
		return g
	}
	return &gauges{
		connected: vec("workloadcluster_connected", "1 while the workload cluster's agent renews its heartbeat, else 0."),
		pods:      vec("workloadcluster_pods", "RemotePods the workload cluster's agent mirrors."),
		served:    vec("workloadcluster_pods_served", "RemotePods of the workload cluster whose addresses are bound."),
		heartbeat: vec("workloadcluster_last_heartbeat_timestamp_seconds", "Unix time of the agent's last heartbeat."),
	}
}

func (g *gauges) set(wc *v1alpha1.WorkloadCluster) {
	l := prometheus.Labels{"namespace": wc.Namespace, "name": wc.Name}
	c := 0.0
	if wc.Status.Connected {
		c = 1
	}
	g.connected.With(l).Set(c)
	g.pods.With(l).Set(float64(wc.Status.Pods))
	g.served.With(l).Set(float64(wc.Status.PodsServed))
	if hb := wc.Status.LastHeartbeat; hb != nil {
		g.heartbeat.With(l).Set(float64(hb.Unix()))
	}
}

func (g *gauges) forget(nn types.NamespacedName) {
	l := prometheus.Labels{"namespace": nn.Namespace, "name": nn.Name}
	for _, v := range []*prometheus.GaugeVec{g.connected, g.pods, g.served, g.heartbeat} {
		v.Delete(l)
	}
}
