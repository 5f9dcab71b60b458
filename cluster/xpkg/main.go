// Command xpkg builds one Crossplane package (.xpkg) from a package root and,
// for Providers and Functions, the Go main package of its runtime, with no
// Docker daemon: one file per architecture, named as internal/tooling/publish
// finds them. `make xpkg` runs it once per package.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/publish"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpkgbuild"
)

func main() {
	var o xpkgbuild.Options
	var out, archs string
	fs := flag.NewFlagSet("xpkg", flag.ExitOnError)
	fs.StringVar(&o.Root, "package-root", "package", "Directory holding crossplane.yaml and the package's other YAML.")
	fs.StringVar(&o.MainPackage, "runtime", "", "Go main package of the runtime image (Providers and Functions), e.g. ./cmd/provider.")
	fs.StringVar(&o.ExamplesDir, "examples", "", "Directory of example YAML for the examples layer; empty for none.")
	fs.StringVar(&o.Version, "version", "v0.1.0", "Package version, recorded as the org.opencontainers.image.version label.")
	fs.StringVar(&archs, "arch", "", "Comma-separated GOARCHs of the runtime (always linux), one package file each; empty for the host's.")
	fs.StringVar(&out, "o", "_output", "Directory to write <name>-<version>[-<arch>].xpkg to.")
	_ = fs.Parse(os.Args[1:])

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, splitArchs(archs), out); err != nil {
		fmt.Fprintln(os.Stderr, "xpkg:", err)
		os.Exit(1)
	}
}

func splitArchs(s string) []string {
	var out []string
	for a := range strings.SplitSeq(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// run builds the package once per arch; a package without a runtime (a
// Configuration) is built once, with no arch in its file name.
func run(ctx context.Context, o xpkgbuild.Options, archs []string, dir string) error {
	if o.MainPackage == "" || len(archs) == 0 {
		archs = []string{""}
	}
	for _, arch := range archs {
		o.Arch = arch
		p, err := xpkgbuild.Build(ctx, o)
		if err != nil {
			return err
		}
		if o.MainPackage != "" && arch == "" {
			cf, err := p.Image.ConfigFile()
			if err != nil {
				return err
			}
			arch = cf.Architecture
		}
		out := filepath.Join(dir, publish.FileName(p.Name, o.Version, arch, publish.ExtPackage))
		if err := xpkgbuild.WriteFile(out, p.Image); err != nil {
			return err
		}
		d, err := p.Image.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s %s %s %s\n", out, p.Kind, p.Name, d)
	}
	return nil
}
