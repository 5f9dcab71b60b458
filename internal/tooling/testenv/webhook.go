package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	admv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// PodWebhookFile is the provider package's MutatingWebhookConfiguration.
func PodWebhookFile() string {
	return filepath.Join(RepoRoot(), "package", "webhookconfigurations", "pod-address.yaml")
}

// InstallPodWebhook creates the package's MutatingWebhookConfiguration, as
// Crossplane would, but pointed at a webhook server of the test: base is
// its https://host:port, caBundle the CA of its certificate. Each webhook
// keeps the package's path, rules, selectors and policies. The
// configuration is named name, so that tests do not share one.
func InstallPodWebhook(ctx context.Context, kube client.Client, name, base string, caBundle []byte) (*admv1.MutatingWebhookConfiguration, error) {
	objs, err := ReadYAML(PodWebhookFile())
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 {
		return nil, fmt.Errorf("%s: %d objects, want one MutatingWebhookConfiguration", PodWebhookFile(), len(objs))
	}
	c := &admv1.MutatingWebhookConfiguration{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, c); err != nil {
		return nil, err
	}
	c.SetName(name)
	for i := range c.Webhooks {
		cc := &c.Webhooks[i].ClientConfig
		url := base + *cc.Service.Path
		cc.Service, cc.URL, cc.CABundle = nil, &url, caBundle
	}
	return c, kube.Create(ctx, c)
}

// WebhookClientCert makes a PKI under dir whose client certificate the API
// server presents to every webhook it calls, through an
// AdmissionConfiguration as docs/install.md describes ("The webhook's
// callers"), and returns the option that configures the API server so, and
// the PKI: a webhook served with endpoints.Webhook and the client CA
// filepath.Join(p.ClientDir, "ca.crt") accepts the API server and no one
// else.
func WebhookClientCert(dir string) (Option, *PKI, error) {
	p, err := NewPKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, nil, err
	}
	kubeconfig := filepath.Join(dir, "webhook-clients.yaml")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
users:
  - name: "*"
    user:
      client-certificate: %s
      client-key: %s
`, filepath.Join(p.ClientDir, "tls.crt"), filepath.Join(p.ClientDir, "tls.key"))
	if err := os.WriteFile(kubeconfig, []byte(kc), 0o600); err != nil {
		return nil, nil, err
	}
	admission := filepath.Join(dir, "admission.yaml")
	ac := "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"
	for _, plugin := range []string{"MutatingAdmissionWebhook", "ValidatingAdmissionWebhook"} {
		ac += fmt.Sprintf(`  - name: %s
    configuration:
      apiVersion: apiserver.config.k8s.io/v1
      kind: WebhookAdmissionConfiguration
      kubeConfigFile: %s
`, plugin, kubeconfig)
	}
	if err := os.WriteFile(admission, []byte(ac), 0o600); err != nil {
		return nil, nil, err
	}
	return func(e *envtest.Environment) {
		e.ControlPlane.GetAPIServer().Configure().Set("admission-control-config-file", admission)
	}, p, nil
}
