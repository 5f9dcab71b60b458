// Command agent runs in a workload cluster behind NAT and connects out to
// the management cluster where the provider runs (docs/nat-clusters.md).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/agent"
)

type options struct {
	kubeconfig, hubKubeconfig     string
	cluster, namespace            string
	tokenFile, bootstrapTokenFile string
	heartbeat                     time.Duration
	healthAddr, metricsAddr       string
	debug                         bool
}

func parseFlags(args []string) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "Path to a kubeconfig of the workload cluster; empty means in-cluster config.")
	fs.StringVar(&o.hubKubeconfig, "hub-kubeconfig", "", "Path to a kubeconfig of the management cluster: its server and CA (credentials in it are ignored).")
	fs.StringVar(&o.cluster, "cluster-name", "", "Name of this cluster's WorkloadCluster in the management cluster.")
	fs.StringVar(&o.namespace, "hub-namespace", "", "Namespace of the WorkloadCluster in the management cluster.")
	fs.StringVar(&o.tokenFile, "token-file", "", "File where the agent keeps its own token of the management cluster; it must be writable.")
	fs.StringVar(&o.bootstrapTokenFile, "bootstrap-token-file", "", "File holding a token of the <cluster>-bootstrap ServiceAccount; used only while --token-file holds no valid token.")
	fs.DurationVar(&o.heartbeat, "heartbeat-interval", v1alpha1.DefaultHeartbeatInterval, "How often the heartbeat Lease is renewed; the provider counts the agent disconnected three intervals after the last renewal.")
	fs.StringVar(&o.healthAddr, "health-probe-bind-address", ":8081", "Address of /healthz and /readyz; 0 turns them off.")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", "0", "Address of /metrics; 0 turns it off.")
	fs.BoolVar(&o.debug, "debug", false, "Log at debug level.")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.hubKubeconfig == "":
		return o, errors.New("--hub-kubeconfig is required")
	case o.cluster == "" || o.namespace == "":
		return o, errors.New("--cluster-name and --hub-namespace are required")
	case o.tokenFile == "":
		return o, errors.New("--token-file is required")
	case o.heartbeat < time.Second:
		return o, fmt.Errorf("--heartbeat-interval must be at least 1s, got %s", o.heartbeat)
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	level := zapcore.InfoLevel
	if o.debug {
		level = zapcore.DebugLevel
	}
	log := zap.New(zap.Level(level)).WithName("tencentcloud-network-agent")
	ctrl.SetLogger(log)
	if err := run(o, log); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

func run(o options, log logr.Logger) error {
	local, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("cannot load the workload cluster's kubeconfig: %w", err)
	}
	hub, err := clientcmd.BuildConfigFromFlags("", o.hubKubeconfig)
	if err != nil {
		return fmt.Errorf("cannot load --hub-kubeconfig: %w", err)
	}
	return agent.Run(ctrl.SetupSignalHandler(), agent.Config{
		Local: local, Hub: hub, Cluster: o.cluster, Namespace: o.namespace,
		TokenFile: o.tokenFile, BootstrapTokenFile: o.bootstrapTokenFile,
		HeartbeatInterval: o.heartbeat, HealthAddr: o.healthAddr, MetricsAddr: o.metricsAddr, Log: log,
	})
}
