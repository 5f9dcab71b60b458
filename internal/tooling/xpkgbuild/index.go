package xpkgbuild

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Index returns an image index with one entry per image, each under the
// platform its config names. Crossplane's package manager fetches a
// package with go-containerregistry's default platform, linux/amd64, so an
// index of packages needs a linux/amd64 entry to be installable; the
// kubelet then pulls the runtime of its node's platform from the same
// index.
func Index(imgs ...v1.Image) (v1.ImageIndex, error) {
	if len(imgs) == 0 {
		return nil, errors.New("an index needs at least one image")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	seen := map[string]bool{}
	for i, img := range imgs {
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		if cf.OS == "" || cf.Architecture == "" {
			return nil, fmt.Errorf("image %d of the index names no platform", i)
		}
		p := v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}
		if seen[p.String()] {
			return nil, fmt.Errorf("two images for platform %s", p)
		}
		seen[p.String()] = true
		mt, err := img.MediaType()
		if err != nil {
			return nil, err
		}
		// Docker schema 2 manifests go in a Docker manifest list, the type
		// registries and containerd expect around them.
		if mt == types.DockerManifestSchema2 {
			idx = mutate.IndexMediaType(idx, types.DockerManifestList)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{MediaType: mt, Platform: &p},
		})
	}
	return idx, nil
}

// PushIndex writes idx, with all its images, to a registry reference.
func PushIndex(ctx context.Context, idx v1.ImageIndex, ref string) error {
	r, err := Reference(ref)
	if err != nil {
		return err
	}
	return remote.WriteIndex(r, idx, RemoteOptions(ctx)...)
}

// Reference parses a registry reference. A registry served on this
// machine (OnThisHost) is spoken to over plain HTTP; any other only over
// TLS.
func Reference(ref string) (name.Reference, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, err
	}
	if OnThisHost(r.Context().RegistryStr()) {
		return name.ParseReference(ref, name.Insecure)
	}
	return r, nil
}

// OnThisHost says whether a registry host[:port] is this machine:
// localhost, a loopback address, or an address one of its interfaces holds
// (the real node serves its registry on the node's IP); packets to those
// never leave the machine.
func OnThisHost(registry string) bool {
	host := registry
	if h, _, err := net.SplitHostPort(registry); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// RemoteOptions are the options of every push: credentials from the
// Docker config (as `docker login` and `crossplane xpkg login` leave
// them), and no plain HTTP except to a registry on this machine.
func RemoteOptions(ctx context.Context) []remote.Option {
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(authn.DefaultKeychain),
		remote.WithTransport(tlsUnlessLoopback{remote.DefaultTransport}),
	}
}

// tlsUnlessLoopback refuses plain HTTP to other hosts. go-containerregistry
// falls back to HTTP for private (RFC 1918) addresses and *.local names,
// which would send credentials and packages in the clear.
type tlsUnlessLoopback struct{ next http.RoundTripper }

func (t tlsUnlessLoopback) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" && !OnThisHost(req.URL.Host) {
		return nil, fmt.Errorf("refusing plain HTTP to %s: only registries on this machine are spoken to without TLS", req.URL.Host)
	}
	return t.next.RoundTrip(req)
}
