// Command provider runs the Tencent Cloud network Crossplane provider, in a
// cluster or out of cluster against a kubeconfig.
package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"runtime/debug"
	"strconv"
	"time"

	"go.uber.org/zap/zapcore"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/gate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/customresourcesgate"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis"
	networkv1alpha1 "github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/clients/clb"
	pcontroller "github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/ippool"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/podaddress/audit"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/endpoints"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/memlimit"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/randhostport"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/seal"
	pwebhook "github.com/tencentcloud-network/provider-tencentcloud-network/internal/webhook"
)

type options struct {
	kubeconfig         string
	debug              bool
	leaderElection     bool
	leaderElectionNS   string
	recordsKeyNS       string
	syncInterval       time.Duration
	pollInterval       time.Duration
	maxReconcileRate   int
	kubeQPS            float64
	kubeBurst          int
	podEvents          string
	metricsAddr        string
	metricsSecure      bool
	healthAddr         string
	pprofAddr          string
	pprofAllowRemote   bool
	managementPolicies bool
	leaderElectionID   string
	leaseDuration      time.Duration
	renewDeadline      time.Duration
	apiRate            float64
	targetBatchWindow  time.Duration
	targetBatchMaxWait time.Duration
	cloudCallMode      string
	targetAudit        time.Duration
	webhookAddr        string
	webhookCertDir     string
	webhookClientCA    string
	admissionGrace     time.Duration
	randHostPorts      randhostport.Range
	netservice         ippool.ServerOptions
	netserviceKeep     time.Duration
	memoryLimit        string
	maxPortsPerPod     int
	pendingHold        time.Duration
	gameServerSetPools bool
}

// The Kubernetes client's defaults. A bound Pod costs the provider about
// four writes; a burst of 1000 Pods that the API server creates in 4 s
// needs about 1000 requests per second for its addresses to keep up. The
// API server's priority and fairness still queues the provider behind
// other clients when it is loaded.
const (
	DefaultKubeQPS   = 1000
	DefaultKubeBurst = 2000
)

// webhookCertDirEnv is set by Crossplane on a provider whose revision has a
// TLS server certificate: the directory holds its tls.crt and tls.key.
const webhookCertDirEnv = "WEBHOOK_TLS_CERT_DIR"

func parseFlags(args []string) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("provider", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "Path to a kubeconfig; empty means in-cluster config.")
	fs.BoolVar(&o.debug, "debug", false, "Log at debug level.")
	fs.BoolVar(&o.leaderElection, "leader-election", false, "Elect a leader so that only one replica reconciles.")
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", "crossplane-system", "Namespace of the leader election Lease.")
	fs.StringVar(&o.recordsKeyNS, "records-key-namespace", seal.DefaultNamespace, "Namespace of the Secret "+seal.SecretName+", the key the provider seals its PodAddress records with (made at first start); only the provider and the platform team should read Secrets there.")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "crossplane-leader-election-provider-tencentcloud-network", "Name of the leader election Lease.")
	fs.DurationVar(&o.leaseDuration, "leader-election-lease-duration", 60*time.Second, "How long a leader holds its lease without renewing it.")
	fs.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", 50*time.Second, "How long the leader retries renewing before giving up.")
	fs.DurationVar(&o.syncInterval, "sync", time.Hour, "How often every cached object is re-listed.")
	fs.DurationVar(&o.pollInterval, "poll", time.Minute, "How often a managed resource is checked for drift.")
	fs.IntVar(&o.maxReconcileRate, "max-reconcile-rate", 10, "Reconciles per second across all controllers, and workers per controller.")
	fs.Float64Var(&o.kubeQPS, "kube-api-qps", DefaultKubeQPS, "Requests per second the provider's Kubernetes client may send, apart from watches; a negative value sends without a client-side limit and leaves it to the API server's priority and fairness.")
	fs.IntVar(&o.kubeBurst, "kube-api-burst", DefaultKubeBurst, "Requests the Kubernetes client may send at once above --kube-api-qps.")
	fs.StringVar(&o.podEvents, "pod-events", string(podaddress.PodEventsWarnings), "Which Events the provider writes on Pods: warnings (only what needs a look: an invalid request, no free port…) or all (also a Normal Event per Pod bound, isolated or moved).")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus metrics endpoint (the port Crossplane names metrics); 0 disables it.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS to callers the API server authenticates and lets GET the non-resource URL /metrics; false serves plain HTTP to anyone, on a loopback --metrics-bind-address only.")
	fs.StringVar(&o.healthAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints (plain HTTP, for the kubelet; they say ok and nothing else); 0 disables them.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "", "Address of Go's /debug/pprof profiles (heap, CPU, goroutines); empty disables them. A debugging aid with no authentication: a loopback address only (reach it with kubectl port-forward) unless --pprof-allow-remote.")
	fs.BoolVar(&o.pprofAllowRemote, "pprof-allow-remote", false, "Let --pprof-bind-address be an address other hosts reach.")
	fs.BoolVar(&o.managementPolicies, "enable-management-policies", true, "Honour spec.managementPolicies (Observe-only import, orphaning).")
	fs.Float64Var(&o.apiRate, "api-rate", clb.DefaultRate, "Tencent Cloud API calls per second per action, per account and region (the documented limit is 20).")
	fs.DurationVar(&o.targetBatchWindow, "target-batch-window", clb.DefaultTargetBatchWindow, "How long target registrations of many Pods are gathered into one BatchRegisterTargets call per load balancer.")
	fs.DurationVar(&o.targetBatchMaxWait, "target-batch-max-wait", clb.DefaultTargetBatchMaxWait, "How long a burst of target changes keeps one load balancer's batch open: about one call per load balancer per this long while Pods keep coming.")
	fs.StringVar(&o.cloudCallMode, "cloud-call-mode", clb.CallsBatched, "batched: target changes of many Pods share calls; naive: one register call per Pod, waited inline by its reconcile (a measuring aid for benchmarks, not for production).")
	fs.DurationVar(&o.targetAudit, "target-audit-interval", audit.DefaultInterval, "How often the targets of bound PodAddresses and the PortPools' listeners are compared with the cloud and repaired; 0 disables it.")
	certDir := os.Getenv(webhookCertDirEnv)
	webhookAddr := ""
	if certDir != "" {
		webhookAddr = ":9443"
	}
	fs.StringVar(&o.webhookAddr, "webhook-bind-address", webhookAddr, "Address of the Pod admission webhook (HTTPS); empty disables it. Defaults to :9443 when "+webhookCertDirEnv+" is set, as Crossplane does.")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", certDir, "Directory holding the webhook's tls.crt and tls.key.")
	fs.StringVar(&o.webhookClientCA, "webhook-client-ca", "", "PEM file of the CA certificates whose client certificates the webhook accepts; callers without one are refused in the TLS handshake. Empty: any caller that reaches the port is served (Crossplane gives the API server no client certificate; docs/install.md says how to).")
	fs.DurationVar(&o.admissionGrace, "webhook-admission-grace", pwebhook.DefaultAdmissionGrace, "How long ports allocated when a Pod is admitted wait for the Pod to be created before they are released.")
	fs.StringVar(&o.netservice.Address, "netservice-bind-address", "", "Address (host:port, or "+ippool.UnixPrefix+"<path> for a socket) of the CNI allocator HTTP API over NetPools (the bcs netservice API); empty disables it. Served by the leader only, over HTTPS to callers authenticated by token or client certificate and authorised by RBAC.")
	fs.StringVar(&o.netservice.CertDir, "netservice-cert-dir", certDir, "Directory holding the allocator API's serving tls.crt and tls.key. Defaults to "+webhookCertDirEnv+", the certificate Crossplane issues for the provider.")
	fs.StringVar(&o.netservice.ClientCA, "netservice-client-ca", "", "PEM file of CAs whose client certificates identify allocator API callers (CN the user, O the groups); empty accepts bearer tokens only.")
	fs.BoolVar(&o.netservice.Insecure, "netservice-insecure", false, "DANGEROUS: serve the allocator API over plain HTTP with no authentication, to anyone who reaches it; allowed only on a loopback address or a "+ippool.UnixPrefix+"<path> socket.")
	fs.DurationVar(&o.netserviceKeep, "netservice-statefulset-ip-keep", time.Hour, "How long a StatefulSet Pod's IP is kept for it after its container is released, unless the Pod's "+networkv1alpha1.AnnotationFixedIPKeep+" annotation says.")
	fs.StringVar(&o.memoryLimit, "memory-limit", memlimit.Auto, "The Go runtime's soft memory limit: auto ($GOMEMLIMIT when set, else 90 % of the container's cgroup memory limit, else none), none, or a quantity such as 512Mi. Near it the runtime collects garbage sooner rather than let the heap double.")
	fs.DurationVar(&o.pendingHold, "pending-hold", podaddress.DefaultPendingHold, "How long a Pod that has not run on a node keeps its ports in pools of other namespaces; then they are given back until it runs. 0 means for ever.")
	fs.IntVar(&o.maxPortsPerPod, "max-ports-per-pod", podaddress.DefaultMaxPortsPerPod, "Addresses (one per port and pool) one Pod may ask for, by annotation or policy; a request over it is Invalid before anything is allocated. 0 means no limit.")
	fs.BoolVar(&o.gameServerSetPools, "gameserverset-pools", true, "Make a CLBPortPool <namespace>-<name> for each OpenKruiseGame GameServerSet with networkType TencentCloud-CLB, as tke-extend does, once the GameServerSet kind is served; false turns that controller off.")
	randRange := fs.String("randhostport-range", randhostport.DefaultRange().String(), "Host ports (min-max) the random hostPort webhook picks from; it is served whenever the webhook server runs.")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if _, err := memlimit.Parse(o.memoryLimit); err != nil {
		return o, err
	}
	r, err := randhostport.ParseRange(*randRange)
	if err != nil {
		return o, fmt.Errorf("--randhostport-range: %w", err)
	}
	o.randHostPorts = r
	if o.admissionGrace <= 0 {
		return o, fmt.Errorf("--webhook-admission-grace must be positive, got %s", o.admissionGrace)
	}
	if o.netservice.Address != "" {
		if o.netservice.Insecure {
			// Crossplane's certificate directory is a default, not a choice.
			if o.netservice.CertDir == certDir {
				o.netservice.CertDir = ""
			}
		}
		if err := o.netservice.Validate(); err != nil {
			return o, err
		}
	}
	if o.netserviceKeep < 0 {
		return o, fmt.Errorf("--netservice-statefulset-ip-keep must not be negative, got %s", o.netserviceKeep)
	}
	if o.kubeBurst < 1 {
		return o, fmt.Errorf("--kube-api-burst must be at least 1, got %d", o.kubeBurst)
	}
	if o.kubeQPS == 0 || math.IsNaN(o.kubeQPS) || math.IsInf(o.kubeQPS, 0) {
		return o, fmt.Errorf("--kube-api-qps must be a positive number, or negative for no limit, got %v", o.kubeQPS)
	}
	switch podaddress.PodEvents(o.podEvents) {
	case podaddress.PodEventsWarnings, podaddress.PodEventsAll:
	default:
		return o, fmt.Errorf("--pod-events must be %s or %s, got %q", podaddress.PodEventsWarnings, podaddress.PodEventsAll, o.podEvents)
	}
	if o.pendingHold < 0 {
		return o, fmt.Errorf("--pending-hold must not be negative (0 means for ever), got %s", o.pendingHold)
	}
	if o.maxPortsPerPod < 0 {
		return o, fmt.Errorf("--max-ports-per-pod must not be negative (0 means no limit), got %d", o.maxPortsPerPod)
	}
	if o.maxReconcileRate < 1 {
		return o, fmt.Errorf("--max-reconcile-rate must be at least 1, got %d", o.maxReconcileRate)
	}
	// NaN passes a "<= 0" check; Inf would turn the limit off.
	if !(o.apiRate > 0) || math.IsInf(o.apiRate, 1) {
		return o, fmt.Errorf("--api-rate must be a positive number, got %v", o.apiRate)
	}
	if o.cloudCallMode != clb.CallsBatched && o.cloudCallMode != clb.CallsNaive {
		return o, fmt.Errorf("--cloud-call-mode must be %s or %s, got %q", clb.CallsBatched, clb.CallsNaive, o.cloudCallMode)
	}
	if o.targetBatchMaxWait < 0 {
		return o, fmt.Errorf("--target-batch-max-wait must not be negative, got %s", o.targetBatchMaxWait)
	}
	if o.targetAudit < 0 {
		return o, fmt.Errorf("--target-audit-interval must not be negative, got %s", o.targetAudit)
	}
	if o.pollInterval < time.Second {
		return o, fmt.Errorf("--poll must be at least 1s, got %s", o.pollInterval)
	}
	if !o.metricsSecure && o.metricsAddr != "0" && !endpoints.Loopback(o.metricsAddr) {
		return o, fmt.Errorf("--metrics-secure=false serves metrics to anyone: --metrics-bind-address must then be a loopback address such as 127.0.0.1:8080, got %q", o.metricsAddr)
	}
	if o.pprofAddr != "" && !o.pprofAllowRemote && !endpoints.Loopback(o.pprofAddr) {
		return o, fmt.Errorf("--pprof-bind-address %q is reachable from other hosts and the profiles have no authentication: use a loopback address such as 127.0.0.1:6060, or add --pprof-allow-remote", o.pprofAddr)
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "provider:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	level := zapcore.InfoLevel
	if o.debug {
		level = zapcore.DebugLevel
	}
	zl := zap.New(zap.Level(level))
	ctrl.SetLogger(zl)
	log := logging.NewLogrLogger(zl.WithName("provider-tencentcloud-network"))

	// Before the caches fill: the limit paces the collector from the start.
	limit, from, err := memlimit.Choose(o.memoryLimit, os.Getenv("GOMEMLIMIT"), "/sys/fs/cgroup")
	if err != nil {
		log.Info("Running without a memory limit", "error", err)
	} else if limit > 0 {
		debug.SetMemoryLimit(limit)
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("cannot load kubeconfig: %w", err)
	}
	// The client's own limit, not --max-reconcile-rate's: bursts of Pods
	// write their addresses as fast as the API server takes them, while
	// managed resources still reconcile at the global rate.
	cfg.QPS, cfg.Burst = float32(o.kubeQPS), o.kubeBurst

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := apis.AddToScheme(scheme); err != nil {
		return err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}

	// The records' key is read (or made) before anything caches a
	// PodAddress: the cache drops records without a valid seal.
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	sealer, err := seal.Load(context.Background(), direct, o.recordsKeyNS)
	if err != nil {
		return err
	}

	var webhookServer webhook.Server
	if o.webhookAddr != "" {
		host, port, err := splitHostPort(o.webhookAddr)
		if err != nil {
			return fmt.Errorf("--webhook-bind-address: %w", err)
		}
		wo, err := endpoints.Webhook(host, port, o.webhookCertDir, o.webhookClientCA)
		if err != nil {
			return fmt.Errorf("--webhook-client-ca: %w", err)
		}
		webhookServer = webhook.NewServer(wo)
	}

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		WebhookServer:              webhookServer,
		Scheme:                     scheme,
		Cache:                      pcontroller.CacheOptions(&o.syncInterval, sealer),
		Metrics:                    endpoints.Metrics(o.metricsAddr, o.metricsSecure),
		HealthProbeBindAddress:     o.healthAddr,
		PprofBindAddress:           o.pprofAddr,
		Controller:                 config.Controller{UsePriorityQueue: ptr.To(pcontroller.UsePriorityQueue)},
		LeaderElection:             o.leaderElection,
		LeaderElectionID:           o.leaderElectionID,
		LeaderElectionNamespace:    o.leaderElectionNS,
		LeaderElectionResourceLock: resourcelock.LeasesResourceLock,
		// Long leases: a busy provider (hundreds of reconciles per second) can
		// miss a short renew deadline and lose leadership for no good reason.
		LeaseDuration: &o.leaseDuration,
		RenewDeadline: &o.renewDeadline,
		// A leader stopped by SIGTERM (its Pod deleted, a rollout) hands
		// the lease over once its controllers have stopped, so another
		// replica leads within its retry period instead of waiting out the
		// lease. Safe because run returns, and the process ends, right
		// after the manager.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("cannot create manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.Add(&seal.Migrator{Sealer: sealer, Kube: direct, Namespace: o.recordsKeyNS, Log: log}); err != nil {
		return err
	}

	flags := &feature.Flags{}
	if o.managementPolicies {
		flags.Enable(feature.EnableBetaManagementPolicies)
	}
	copts := controller.Options{
		Logger:                  log,
		GlobalRateLimiter:       ratelimiter.NewGlobal(o.maxReconcileRate),
		PollInterval:            o.pollInterval,
		MaxConcurrentReconciles: o.maxReconcileRate,
		Features:                flags,
		// safe-start: each controller starts once the CRDs of its kinds
		// are established, so the provider runs with only the kinds a
		// ManagedResourceActivationPolicy activated and picks up the rest
		// as they appear.
		Gate: new(gate.Gate[schema.GroupVersionKind]),
	}
	if err := customresourcesgate.Setup(mgr, copts); err != nil {
		return fmt.Errorf("cannot set up the CRD gate: %w", err)
	}
	// One pool per cloud service, with the same rate limit and metrics.
	pools := pcontroller.NewPools(clb.Options{Rate: o.apiRate, TargetBatchWindow: o.targetBatchWindow,
		TargetBatchMaxWait: o.targetBatchMaxWait, CallMode: o.cloudCallMode, Registerer: metrics.Registry})
	po := podaddress.Options{TargetAuditInterval: o.targetAudit, PodEvents: podaddress.PodEvents(o.podEvents), MaxPortsPerPod: &o.maxPortsPerPod, PendingHold: &o.pendingHold, Seal: sealer}
	if webhookServer != nil {
		wo := pwebhook.Options{
			Admission:    pwebhook.NewAdmission(o.admissionGrace, log.WithValues("webhook", pwebhook.AdmissionPath)),
			RandHostPort: randhostport.New(o.randHostPorts, log.WithValues("webhook", randhostport.WebhookPath)),
		}
		if err := pwebhook.Setup(mgr, wo); err != nil {
			return fmt.Errorf("cannot set up the webhooks: %w", err)
		}
		po.Admission = wo.Admission
	}
	if err := pcontroller.Setup(mgr, copts, pools, po); err != nil {
		return fmt.Errorf("cannot set up controllers: %w", err)
	}
	if o.gameServerSetPools {
		if err := pcontroller.SetupGameServerSets(mgr, copts); err != nil {
			return fmt.Errorf("cannot set up the GameServerSet controller: %w", err)
		}
	}
	var netservice *ippool.Server
	if o.netservice.Address != "" {
		if netservice, err = ippool.NewServer(o.netservice, log.WithValues("netservice", o.netservice.Address)); err != nil {
			return err
		}
	}
	if err := pcontroller.SetupIPPools(mgr, copts, netservice, o.netserviceKeep); err != nil {
		return fmt.Errorf("cannot set up the NetPool controller: %w", err)
	}
	log.Info("Starting", "cloudCallMode", o.cloudCallMode, "netservice", o.netservice.Address, "netserviceInsecure", o.netservice.Insecure, "poll", o.pollInterval, "maxReconcileRate", o.maxReconcileRate, "kubeAPIQPS", o.kubeQPS, "kubeAPIBurst", o.kubeBurst, "podEvents", o.podEvents, "leaderElection", o.leaderElection, "webhook", o.webhookAddr, "webhookClientCA", o.webhookClientCA != "", "metrics", o.metricsAddr, "metricsSecure", o.metricsSecure, "memoryLimit", limit, "memoryLimitFrom", from)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// splitHostPort splits a bind address such as ":9443" or "127.0.0.1:9443".
func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("invalid port %q", p)
	}
	return host, port, nil
}
