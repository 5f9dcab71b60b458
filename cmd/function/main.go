// Command function serves the provider's composition function,
// function-tencentcloud-network, over gRPC. Crossplane always calls
// functions with mutual TLS, so a certificates folder is required unless
// --insecure is given (only for `crossplane composition render`).
package main

import (
	"flag"
	"fmt"
	"os"

	sdk "github.com/crossplane/function-sdk-go"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/function"
)

type options struct {
	network  string
	address  string
	metrics  string
	certsDir string
	insecure bool
	debug    bool
}

func parseFlags(args []string) (options, error) {
	o := options{}
	fs := flag.NewFlagSet("function", flag.ContinueOnError)
	fs.StringVar(&o.network, "network", "tcp", "Network to listen on: tcp or unix.")
	fs.StringVar(&o.address, "address", ":9443", "Address to listen on.")
	fs.StringVar(&o.metrics, "metrics-address", ":8080", "Address of the Prometheus metrics endpoint; empty disables it.")
	// Crossplane's package runtime mounts the certificates here and names
	// the folder in this variable.
	fs.StringVar(&o.certsDir, "tls-certs-dir", os.Getenv("TLS_SERVER_CERTS_DIR"), "Folder holding tls.crt, tls.key and the client CA ca.crt for mutual TLS.")
	fs.BoolVar(&o.insecure, "insecure", false, "Serve without TLS (for crossplane composition render only; Crossplane itself always uses mutual TLS).")
	fs.BoolVar(&o.debug, "debug", false, "Log at debug level.")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if !o.insecure && o.certsDir == "" {
		return o, fmt.Errorf("--tls-certs-dir (or TLS_SERVER_CERTS_DIR) is required unless --insecure is given")
	}
	return o, nil
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "function:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	log, err := sdk.NewLogger(o.debug)
	if err != nil {
		return err
	}
	fn, err := function.New(log)
	if err != nil {
		return err
	}
	log.Info("serving", "name", function.Name, "address", o.address, "insecure", o.insecure)
	return sdk.Serve(fn,
		sdk.Listen(o.network, o.address),
		sdk.WithMetricsServer(o.metrics),
		sdk.MTLSCertificates(o.certsDir),
		sdk.Insecure(o.insecure))
}
