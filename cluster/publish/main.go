// Command publish pushes what `make xpkg` wrote to a registry: each NAME's
// files of the version as <registry>/<NAME>:<version>, one file as an
// image and one file per architecture as an image index (internal/tooling/publish).
// `make publish` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/publish"
)

func main() {
	var dir, registry, version string
	fs := flag.NewFlagSet("publish", flag.ExitOnError)
	fs.Usage = func() {
		_, _ = fmt.Fprintln(fs.Output(), "usage: publish -registry HOST/PATH [flags] NAME...")
		fs.PrintDefaults()
	}
	fs.StringVar(&dir, "dir", "_output", "Directory make xpkg wrote the files to.")
	fs.StringVar(&registry, "registry", "", "Registry and path, e.g. registry.example.com/tencentcloud-network; plain HTTP only to localhost or a loopback address.")
	fs.StringVar(&version, "version", "v0.1.0", "Version of the files and tag to push.")
	_ = fs.Parse(os.Args[1:])
	if registry == "" || fs.NArg() == 0 {
		fs.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	for _, n := range fs.Args() {
		ref, d, err := publish.Publish(ctx, dir, registry, n, version)
		if err != nil {
			fmt.Fprintln(os.Stderr, "publish:", err)
			os.Exit(1)
		}
		fmt.Printf("%s@%s\n", ref, d)
	}
}
