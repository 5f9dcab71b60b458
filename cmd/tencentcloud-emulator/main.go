// Command tencentcloud-emulator serves the emulated Tencent Cloud CLB API on
// a local address, for demos, end-to-end tests and benchmarks. Point the
// tencentcloud-sdk-go client at the printed endpoint with scheme "http".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/dataplane"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "tencentcloud-emulator:", err)
		os.Exit(1)
	}
}

// options are the command-line flags.
type options struct {
	listen, secretID, secretKey, token, region, profile  string
	stateFile, vipBase, vip6Base, camPolicy, vpcLoopback string
	latency, taskDuration                                time.Duration
	rateLimit                                            float64
	listenerQuota, lbQuota, eipQuota, eipDaily           int
	dataPlane, verbose, autoENI                          bool
}

func parseFlags(args []string, stderr io.Writer) (options, map[string]bool, error) {
	var o options
	fs := flag.NewFlagSet("tencentcloud-emulator", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9443", "address to serve the API on (port 0 picks a free one)")
	fs.StringVar(&o.secretID, "secret-id", emulator.DefaultSecretID, "SecretId accepted by the emulator")
	fs.StringVar(&o.secretKey, "secret-key", emulator.DefaultSecretKey, "SecretKey of --secret-id")
	fs.StringVar(&o.token, "token", "", "session token required with the key pair (temporary credentials); empty for none")
	fs.StringVar(&o.region, "region", emulator.DefaultRegion, "region advertised to clients (all real region names are accepted)")
	fs.StringVar(&o.profile, "profile", "default", "preset: default (no latency, 50ms tasks, 20 req/s) or realistic (50ms latency, 1s tasks, 20 req/s)")
	fs.DurationVar(&o.latency, "latency", 0, "latency added to every call (default: from --profile)")
	fs.DurationVar(&o.taskDuration, "task-duration", 0, "duration of asynchronous tasks, 0 = instant (default: from --profile)")
	fs.Float64Var(&o.rateLimit, "rate-limit", 0, "requests per second per action and SecretId, 0 = off (default: from --profile)")
	fs.IntVar(&o.listenerQuota, "listener-quota", 0, "listeners per load balancer (default 50)")
	fs.IntVar(&o.lbQuota, "lb-quota", 0, "OPEN and INTERNAL load balancers per region, each (default 100)")
	fs.IntVar(&o.eipQuota, "eip-quota", 0, "EIPs per region (default 20)")
	fs.IntVar(&o.eipDaily, "eip-daily-limit", 0, "EIP allocations per region and UTC day (default twice --eip-quota)")
	fs.BoolVar(&o.autoENI, "auto-eni", false, "give any private IP looked up by DescribeNetworkInterfaces (address-ip) an ENI")
	fs.StringVar(&o.stateFile, "state-file", "", "JSON file the cloud is loaded from and saved to; empty keeps it in memory")
	fs.BoolVar(&o.dataPlane, "data-plane", false, "forward TCP/UDP traffic from the loopback VIPs to registered targets, and health-check loopback targets")
	fs.StringVar(&o.vpcLoopback, "vpc-loopback-cidr", "", "reach targets inside this IPv4 CIDR (/8 to /32) at 127.x.y.z with their last three octets, e.g. 10.0.0.0/8 (10.1.2.3 at 127.1.2.3); the API still shows their own address")
	fs.StringVar(&o.vipBase, "vip-base", emulator.DefaultVIPBase, "first address of the VIP pool")
	fs.StringVar(&o.vip6Base, "vip6-base", emulator.DefaultVIP6Base, "first address of the IPv6 VIP pool (IPV6 and IPv6FullChain load balancers), in fd00::/8")
	fs.BoolVar(&o.verbose, "verbose", false, "log diagnostics to stderr")
	fs.StringVar(&o.camPolicy, "cam-policy", "", "CAM policy document (JSON file) that --secret-id's calls must satisfy, e.g. examples/providerconfig/cam-policy.json; empty allows everything")
	if err := fs.Parse(args); err != nil {
		return o, nil, err
	}
	if fs.NArg() > 0 {
		return o, nil, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return o, set, nil
}

// config turns flags into an emulator configuration: the profile first,
// then every flag given explicitly.
func (o options) config(set map[string]bool) (emulator.Config, error) {
	cfg, err := emulator.ProfileConfig(o.profile)
	if err != nil {
		return cfg, err
	}
	cfg.Credentials = []emulator.Credential{{SecretID: o.secretID, SecretKey: o.secretKey, Token: o.token}}
	cfg.Region, cfg.StateFile, cfg.VIPBase, cfg.VIP6Base = o.region, o.stateFile, o.vipBase, o.vip6Base
	if set["latency"] {
		cfg.Latency = o.latency
	}
	if set["task-duration"] {
		cfg.TaskDuration = o.taskDuration
	}
	if set["rate-limit"] {
		cfg.RateLimit = o.rateLimit
	}
	if set["listener-quota"] {
		cfg.ListenerQuota = o.listenerQuota
	}
	if set["lb-quota"] {
		cfg.OpenLBQuota, cfg.InternalLBQuota = o.lbQuota, o.lbQuota
	}
	cfg.EIPQuota, cfg.EIPDailyAllocateLimit, cfg.AutoENI = o.eipQuota, o.eipDaily, o.autoENI
	if o.vpcLoopback != "" {
		p, err := netip.ParsePrefix(o.vpcLoopback)
		if err != nil {
			return cfg, fmt.Errorf("--vpc-loopback-cidr: %w", err)
		}
		cfg.VPCLoopbackCIDR = p // emulator.New checks the rest
	}
	if o.camPolicy != "" {
		doc, err := os.ReadFile(o.camPolicy)
		if err != nil {
			return cfg, err
		}
		p, err := emulator.ParseCAMPolicy(doc)
		if err != nil {
			return cfg, fmt.Errorf("%s: %w", o.camPolicy, err)
		}
		cfg.Policies = map[string]*emulator.CAMPolicy{o.secretID: p} // in force before the first call
	}
	return cfg, nil
}

// run serves until ctx ends, then shuts down and saves the state.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, set, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	cfg, err := o.config(set)
	if err != nil {
		return err
	}
	logger := log.New(stderr, "tencentcloud-emulator: ", log.LstdFlags)
	if o.verbose {
		cfg.Logf = logger.Printf
	}
	var plane *dataplane.Plane
	if o.dataPlane {
		plane = dataplane.New(logger.Printf)
		cfg.DataPlane = dataplane.ForEmulator(plane)
		// Targets the data plane reaches are health-checked for real.
		cfg.ProbeTargets = true
	}
	e, endpoint, err := emulator.StartOn(cfg, o.listen)
	if err != nil {
		if plane != nil {
			_ = plane.Close()
		}
		return err
	}
	// One line, key=value, so scripts can pick what they need.
	line := fmt.Sprintf("endpoint=%s scheme=http secretId=%s secretKey=%s region=%s admin=http://%s/_emulator/",
		endpoint, o.secretID, o.secretKey, o.region, endpoint)
	if o.token != "" {
		line += " token=" + o.token
	}
	if _, err := fmt.Fprintln(stdout, line); err != nil {
		logger.Printf("write endpoint line: %v", err)
	}

	<-ctx.Done()
	logger.Printf("shutting down")
	errs := []error{e.Close()} // stops serving and saves the state file
	if plane != nil {
		errs = append(errs, plane.Close())
	}
	return errors.Join(errs...)
}
