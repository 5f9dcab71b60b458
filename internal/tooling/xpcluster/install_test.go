package xpcluster

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// TestInstall installs into a local control plane (no kubelet, so nothing
// runs) from a loopback registry: the Deployments exist as rendered and
// their image is in the registry by digest; a second Install converges and
// keeps the data `core init` would have put in the chart's empty Secrets.
func TestInstall(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	o := InstallOptions{Registry: strings.TrimPrefix(reg.URL, "http://")}
	objs, err := Install(ctx, env.Config, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) < 10 {
		t.Errorf("only %d objects applied", len(objs))
	}
	for _, dep := range []string{"crossplane", "crossplane-rbac-manager"} {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: dep}, d); err != nil {
			t.Fatal(err)
		}
		img := d.Spec.Template.Spec.Containers[0].Image
		if !strings.HasPrefix(img, o.Registry+"/"+Repository+"@sha256:") {
			t.Errorf("%s: image %s", dep, img)
		}
		ref, err := name.ParseReference(img)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := remote.Head(ref, remote.WithContext(ctx)); err != nil {
			t.Errorf("%s: image not in the registry: %v", dep, err)
		}
	}

	s := &corev1.Secret{}
	key := client.ObjectKey{Namespace: Namespace, Name: "crossplane-root-ca"}
	if err := env.Client.Get(ctx, key, s); err != nil {
		t.Fatal(err)
	}
	s.Data = map[string][]byte{"tls.crt": []byte("filled by core init")}
	if err := env.Client.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(ctx, env.Config, o); err != nil {
		t.Fatalf("second install: %v", err)
	}
	if err := env.Client.Get(ctx, key, s); err != nil {
		t.Fatal(err)
	}
	if string(s.Data["tls.crt"]) != "filled by core init" {
		t.Errorf("second install dropped the Secret's data: %v", s.Data)
	}
}
