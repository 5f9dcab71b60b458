// Package clusterdns runs CoreDNS as the cluster DNS of the real node
// (internal/tooling/node): the Service kube-dns at node.DNSIP, which the kubelet
// gives every ClusterFirst Pod as its nameserver, so Pods (and Crossplane
// core dialling dns:///<service>.<namespace>:9443) resolve Services.
//
// It answers for the cluster domain and the reverse zones of the Pod and
// Service ranges only. It forwards nothing: the binary is built without
// the plugins that ask other servers (cluster/local/coredns), and every
// other name is REFUSED.
package clusterdns

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/node"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/xpkgbuild"
)

// Version is the CoreDNS release cluster/local/coredns.sh builds.
const Version = "v1.12.1"

// fieldOwner owns the fields Install applies.
const fieldOwner = "ptn-clusterdns"

// Image builds CoreDNS once (cluster/local/coredns.sh caches the binary)
// and returns it as a runtime image run by the non-root user.
func Image(ctx context.Context) (v1.Image, error) {
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(testenv.RepoRoot(), "cluster", "local", "coredns.sh"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("cannot build CoreDNS: %w", err)
	}
	bin, err := os.ReadFile(strings.TrimSpace(out.String()))
	if err != nil {
		return nil, err
	}
	return xpkgbuild.BinaryImage(xpkgbuild.BinaryOptions{
		Binary: bin,
		Name:   "coredns",
		Labels: map[string]string{"org.opencontainers.image.version": Version},
	})
}

// Install pushes the CoreDNS image to registry (the node's, host:port),
// applies the cluster DNS's objects and returns once the DNS at
// node.DNSIP answers for the kubernetes Service, or ctx ends.
func Install(ctx context.Context, kube client.Client, registry string) error {
	img, err := Image(ctx)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	repo := registry + "/ptn/coredns"
	if err := xpkgbuild.Push(ctx, img, repo+":"+Version); err != nil {
		return fmt.Errorf("cannot push the CoreDNS image: %w", err)
	}
	// By digest, so a rebuilt binary under the same tag rolls the Pod.
	for _, o := range objects(repo + "@" + digest.String()) {
		if err := apply(ctx, kube, o); err != nil {
			return err
		}
	}
	return waitAnswering(ctx, kube)
}

// apply server-side applies o, taking over fields an earlier Install (or
// a person) set.
func apply(ctx context.Context, kube client.Client, o client.Object) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{Object: u}
	unstructured.RemoveNestedField(obj.Object, "status")
	unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	if err := kube.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("cannot apply %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

// waitAnswering waits for the Deployment's Pod to be ready and then for
// the name of the kubernetes Service to resolve, through kube-proxy, to
// its ClusterIP: the whole path a Pod's query takes.
func waitAnswering(ctx context.Context, kube client.Client) error {
	var api corev1.Service
	if err := kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, &api); err != nil {
		return err
	}
	name := "kubernetes.default.svc." + node.ClusterDomain + "."
	r := Resolver()
	for {
		err := ready(ctx, kube)
		if err == nil {
			qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			var addrs []string
			addrs, err = r.LookupHost(qctx, name)
			cancel()
			if err == nil && !slices.Contains(addrs, api.Spec.ClusterIP) {
				err = fmt.Errorf("%s is %v, not %s", name, addrs, api.Spec.ClusterIP)
			}
		}
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the cluster DNS does not answer: %w", err)
		case <-time.After(time.Second):
		}
	}
}

// ready says why the Deployment has no ready Pod of its latest version,
// with the Pods' states, or nil.
func ready(ctx context.Context, kube client.Client) error {
	var d appsv1.Deployment
	if err := kube.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: Name}, &d); err != nil {
		return err
	}
	if d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas >= 1 && d.Status.ReadyReplicas >= 1 && d.Status.UnavailableReplicas == 0 {
		return nil
	}
	var pods corev1.PodList
	if err := kube.List(ctx, &pods, client.InNamespace(Namespace), client.MatchingLabels(podLabels())); err != nil {
		return err
	}
	errs := []error{fmt.Errorf("deployment %s: %d updated, %d ready", Name, d.Status.UpdatedReplicas, d.Status.ReadyReplicas)}
	for _, p := range pods.Items {
		state := string(p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			switch {
			case c.State.Waiting != nil:
				state += fmt.Sprintf(", %s: %s %s", c.Name, c.State.Waiting.Reason, c.State.Waiting.Message)
			case c.State.Terminated != nil:
				state += fmt.Sprintf(", %s: exited %d %s", c.Name, c.State.Terminated.ExitCode, c.State.Terminated.Reason)
			case !c.Ready:
				state += fmt.Sprintf(", %s: running, not ready (restarts %d)", c.Name, c.RestartCount)
			}
		}
		errs = append(errs, fmt.Errorf("pod %s: %s", p.Name, state))
	}
	return errors.Join(errs...)
}

// Resolver asks the cluster DNS only, at node.DNSIP:53 (kube-proxy sends
// it on to the CoreDNS Pod), whatever the host's resolv.conf names.
func Resolver() *net.Resolver {
	server := net.JoinHostPort(node.DNSIP, "53")
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		},
	}
}

func hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
