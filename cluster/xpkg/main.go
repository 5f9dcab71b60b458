// Command xpkg builds one Crossplane package (.xpkg) from a package root and,
// for Providers and Functions, the Go main package of its runtime, with no
// Docker daemon. `make xpkg` runs it once per package.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/xpkgbuild"
)

func main() {
	var o xpkgbuild.Options
	var out string
	fs := flag.NewFlagSet("xpkg", flag.ExitOnError)
	fs.StringVar(&o.Root, "package-root", "package", "Directory holding crossplane.yaml and the package's other YAML.")
	fs.StringVar(&o.MainPackage, "runtime", "", "Go main package of the runtime image (Providers and Functions), e.g. ./cmd/provider.")
	fs.StringVar(&o.ExamplesDir, "examples", "", "Directory of example YAML for the examples layer; empty for none.")
	fs.StringVar(&o.Version, "version", "v0.1.0", "Package version, recorded as the org.opencontainers.image.version label.")
	fs.StringVar(&o.Arch, "arch", "", "GOARCH of the runtime (always linux); empty for the host's.")
	fs.StringVar(&out, "o", "", "The .xpkg file to write.")
	_ = fs.Parse(os.Args[1:])
	if out == "" {
		fmt.Fprintln(os.Stderr, "xpkg: -o is required")
		os.Exit(2)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, out); err != nil {
		fmt.Fprintln(os.Stderr, "xpkg:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o xpkgbuild.Options, out string) error {
	p, err := xpkgbuild.Build(ctx, o)
	if err != nil {
		return err
	}
	if err := xpkgbuild.WriteFile(out, p.Image); err != nil {
		return err
	}
	d, err := p.Image.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %s %s\n", out, p.Kind, p.Name, d)
	return nil
}
