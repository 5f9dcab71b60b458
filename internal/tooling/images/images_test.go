package images

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpkgbuild"
)

var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

func registryHost(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// extract returns the content of one file of img's filesystem.
func extract(t *testing.T, img v1.Image, path string) []byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("%s not in the image: %v", path, err)
		}
		if "/"+strings.TrimPrefix(h.Name, "/") == path {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

// TestImages builds each image, pushes it to a registry on loopback, pulls
// it back and checks what the kubelet runs: entrypoint, user, platform and
// the binary's architecture. The game server and pause are small, so they
// are also built for the other architecture.
func TestImages(t *testing.T) {
	ctx := context.Background()
	host := registryHost(t)
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[runtime.GOARCH]
	cases := []struct {
		name  string
		arch  string
		build func() (v1.Image, error)
	}{
		{AgentName, runtime.GOARCH, func() (v1.Image, error) { return Agent(ctx, "", "v0.0.1") }},
		{GameServerName, runtime.GOARCH, func() (v1.Image, error) { return GameServer(ctx, "") }},
		{GameServerName, other, func() (v1.Image, error) { return GameServer(ctx, other) }},
		{PauseName, runtime.GOARCH, func() (v1.Image, error) { return Pause(ctx, "") }},
		{PauseName, other, func() (v1.Image, error) { return Pause(ctx, other) }},
	}
	for _, c := range cases {
		if c.arch == "" {
			continue // a host that is neither amd64 nor arm64
		}
		t.Run(c.name+"-"+c.arch, func(t *testing.T) {
			img, err := c.build()
			if err != nil {
				t.Fatal(err)
			}
			ref := host + "/test/" + c.name + ":" + c.arch
			if err := Push(ctx, img, ref); err != nil {
				t.Fatalf("push: %v", err)
			}
			r, err := name.ParseReference(ref)
			if err != nil {
				t.Fatal(err)
			}
			pulled, err := remote.Image(r)
			if err != nil {
				t.Fatalf("pull: %v", err)
			}
			cf, err := pulled.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			entry := xpkgbuild.Entrypoint(c.name)
			if !slices.Equal(cf.Config.Entrypoint, []string{entry}) || cf.Config.User != "65532:65532" || cf.OS != "linux" || cf.Architecture != c.arch {
				t.Errorf("config: entrypoint %q user %q platform %s/%s; want [%s] 65532:65532 linux/%s", cf.Config.Entrypoint, cf.Config.User, cf.OS, cf.Architecture, entry, c.arch)
			}
			if c.name == AgentName && cf.Config.Labels[xpkgbuild.LabelVersion] != "v0.0.1" {
				t.Errorf("version label %q", cf.Config.Labels[xpkgbuild.LabelVersion])
			}
			bin := extract(t, pulled, entry)
			f, err := elf.NewFile(bytes.NewReader(bin))
			if err != nil {
				t.Fatalf("entrypoint is not ELF: %v", err)
			}
			if f.Machine != elfMachine[c.arch] {
				t.Errorf("binary for %s, want %s", f.Machine, elfMachine[c.arch])
			}
			if c.name == GameServerName && c.arch == runtime.GOARCH && runtime.GOOS == "linux" {
				runGameServer(t, bin)
			}
		})
	}
}

// runGameServer runs the binary pulled from the image as the kubelet would
// (POD_NAME from the downward API), echoes through it and stops it with
// SIGTERM.
func runGameServer(t *testing.T, bin []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gameserver")
	if err := os.WriteFile(path, bin, 0o700); err != nil { //nolint:gosec // the binary just pulled
		t.Fatal(err)
	}
	cmd := exec.Command(path, "--host", "127.0.0.1", "--tcp", "0", "--udp", "0") //nolint:gosec // the binary just pulled
	cmd.Env = []string{"POD_NAME=room-0"}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	if err != nil {
		t.Fatalf("gameserver said %q: %v", line, err)
	}
	// "… room-0 echoing on tcp 127.0.0.1:N, udp 127.0.0.1:M"
	_, addrs, ok := strings.Cut(strings.TrimSpace(line), "echoing on ")
	if !ok {
		t.Fatalf("gameserver's first line %q names no addresses", line)
	}
	for a := range strings.SplitSeq(addrs, ", ") {
		network, addr, _ := strings.Cut(a, " ")
		c, err := net.DialTimeout(network, addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("hi\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		n, err := c.Read(buf)
		if err != nil || string(buf[:n]) != "room-0: hi\n" {
			t.Errorf("%s %s: got %q, %v", network, addr, buf[:n], err)
		}
		_ = c.Close()
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err != nil {
		t.Errorf("gameserver after SIGTERM: %v, want exit 0", err)
	}
}

func TestBuildIndex(t *testing.T) {
	ctx := context.Background()
	idx, err := BuildIndex(ctx, PauseName, "", "amd64", "arm64")
	if err != nil {
		t.Fatal(err)
	}
	ref := registryHost(t) + "/test/pause:v1"
	if err := Push(ctx, idx, ref); err != nil {
		t.Fatalf("push index: %v", err)
	}
	r, _ := name.ParseReference(ref)
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := remote.Image(r, remote.WithPlatform(v1.Platform{OS: "linux", Architecture: arch}))
		if err != nil {
			t.Fatalf("pull linux/%s: %v", arch, err)
		}
		if cf, _ := img.ConfigFile(); cf == nil || cf.Architecture != arch {
			t.Errorf("linux/%s resolves to %+v", arch, cf)
		}
	}
	if _, err := Build(ctx, "nope", "", ""); err == nil || !strings.Contains(err.Error(), GameServerName) {
		t.Errorf("unknown image: %v, want an error listing the images", err)
	}
	if err := Push(ctx, nil, ref); err == nil {
		t.Error("Push(nil): want an error")
	}
}

// TestAgentExampleNamesTheImage: examples/nat/agent.yaml runs the image
// make publish pushes, <registry>/tencentcloud-network-agent:<version>.
func TestAgentExampleNamesTheImage(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "..", "..", "examples", "nat", "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var found []string
	for {
		d := appsv1.Deployment{}
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if d.Kind != "Deployment" {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			found = append(found, c.Image)
			r, err := name.ParseReference(c.Image)
			if err != nil {
				t.Fatalf("image %q: %v", c.Image, err)
			}
			repo := r.Context().RepositoryStr()
			if repo[strings.LastIndex(repo, "/")+1:] != AgentName {
				t.Errorf("agent.yaml runs %s, want the repository named %s", c.Image, AgentName)
			}
		}
	}
	if len(found) != 1 {
		t.Fatalf("containers in agent.yaml's Deployment: %q, want the agent's only", found)
	}
}
