// Command images builds the container images of internal/tooling/images — the NAT
// agent, the game server, pause — for one or more architectures, and
// writes each as an image tarball or pushes them to a registry (several
// architectures as one index). `make xpkg` writes the agent's.
//
//	go run ./cluster/images -arch amd64,arm64 -o _output tencentcloud-network-agent
//	go run ./cluster/images -arch amd64 -push 127.0.0.1:5000/library gameserver pause
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/images"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/publish"
)

type options struct {
	version, archs, out, push string
	names                     []string
}

func main() {
	var o options
	fs := flag.NewFlagSet("images", flag.ExitOnError)
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), "usage: images [flags] NAME...  (NAME: %s)\n", strings.Join(images.Names(), ", "))
		fs.PrintDefaults()
	}
	fs.StringVar(&o.version, "version", "v0.1.0", "Tag of the images, also recorded as the agent's org.opencontainers.image.version label.")
	fs.StringVar(&o.archs, "arch", runtime.GOARCH, "Comma-separated GOARCHs to build for (always linux).")
	fs.StringVar(&o.out, "o", "", "Directory to write <name>-<version>-<arch>.tar image tarballs to, tagged <name>:<version>.")
	fs.StringVar(&o.push, "push", "", "Registry and path to push <push>/<name>:<version> to instead; plain HTTP only to localhost or a loopback address.")
	_ = fs.Parse(os.Args[1:])
	o.names = fs.Args()
	if len(o.names) == 0 || (o.out == "") == (o.push == "") {
		fs.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	var archs []string
	for a := range strings.SplitSeq(o.archs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			archs = append(archs, a)
		}
	}
	if len(archs) == 0 {
		return fmt.Errorf("no architecture in -arch %q", o.archs)
	}
	for _, n := range o.names {
		if o.push != "" {
			if err := pushImage(ctx, o, n, archs); err != nil {
				return err
			}
			continue
		}
		for _, a := range archs {
			img, err := images.Build(ctx, n, a, o.version)
			if err != nil {
				return err
			}
			if err := write(filepath.Join(o.out, publish.FileName(n, o.version, a, publish.ExtImage)), n+":"+o.version, img); err != nil {
				return err
			}
		}
	}
	return nil
}

func pushImage(ctx context.Context, o options, n string, archs []string) error {
	ref := strings.TrimSuffix(o.push, "/") + "/" + n + ":" + o.version
	var t remote.Taggable
	var err error
	if len(archs) == 1 {
		t, err = images.Build(ctx, n, archs[0], o.version)
	} else {
		t, err = images.BuildIndex(ctx, n, o.version, archs...)
	}
	if err != nil {
		return err
	}
	if err := images.Push(ctx, t, ref); err != nil {
		return err
	}
	fmt.Println(ref)
	return nil
}

// write writes img as a tarball that `docker load` and `ctr images import`
// read, tagged with tag.
func write(path, tag string, img v1.Image) error {
	t, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	f, err := os.Create(filepath.Clean(path))
	if err != nil {
		return err
	}
	if err := tarball.Write(t, img, f); err != nil {
		_ = f.Close()
		return err
	}
	d, _ := img.Digest()
	fmt.Printf("%s %s %s\n", path, tag, d)
	return f.Close()
}
