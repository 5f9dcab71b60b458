package node_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/node"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestKilledNodeIsSwept kills `make node`'s command with SIGKILL while a
// Pod runs: its components die with it (containerd's shims and the Pod's
// containers do not), and the next run's sweep leaves the machine as it
// was before.
func TestKilledNodeIsSwept(t *testing.T) {
	if err := node.Supported(); err != nil {
		t.Fatalf("this suite needs the real node: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	before, err := node.ReadHostState(node.DefaultDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "node")
	build := exec.Command("go", "build", "-o", bin, "./cluster/local/node")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	kc := filepath.Join(dir, "kubeconfig")
	cmd := exec.Command(bin, "--kubeconfig", kc)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			t.Log(sc.Text())
			if strings.Contains(sc.Text(), "Ctrl-C stops it") {
				ready <- nil
				_, _ = io.Copy(io.Discard, out)
				return
			}
		}
		ready <- errors.New("the node command ended before it was ready")
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the node command did not become ready")
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "sleeper"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: node.IP().String() + ":5000/ptn/pause:node"}}},
	}
	if err := kube.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	err = testenv.Eventually(ctx, 2*time.Minute, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		if pod.Status.Phase != corev1.PodRunning {
			return errors.New("pod " + string(pod.Status.Phase))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	killed = true
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	left, err := node.ReadHostState(node.DefaultDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Processes) == 0 || len(left.Mounts) == 0 {
		t.Fatalf("a killed node left no process or mount: the sweep below proves nothing (%+v)", left)
	}
	t.Logf("left by the killed node: %d processes, %d mounts", len(left.Processes), len(left.Mounts))
	// The control plane the command started dies with it.
	err = testenv.Eventually(ctx, 30*time.Second, func() error {
		if pids := processesNaming("ptn-node-certs-"); len(pids) > 0 {
			return fmt.Errorf("the killed command's etcd or kube-apiserver still runs: %v", pids)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	if err := node.Sweep(node.DefaultDir); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	after, err := node.ReadHostState(node.DefaultDir)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(before, after); d != "" {
		t.Errorf("the sweep left the machine changed (-before +after):\n%s", d)
	}
}

// processesNaming lists the processes whose command line contains s.
func processesNaming(s string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmd), s) && e.Name() != fmt.Sprint(os.Getpid()) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return found
}
