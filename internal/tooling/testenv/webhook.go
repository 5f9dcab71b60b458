package testenv

import (
	"context"
	"fmt"
	"path/filepath"

	admv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
