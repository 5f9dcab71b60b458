package gitops

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/argocd"
)

// A healthSetting is what argocd-cm holds for health: our snippet, or
// nothing (Argo CD's built-in checks alone).
type healthSetting struct {
	name     string
	settings map[string]string
	// witness is the ClusterProviderConfig's health message under this
	// setting: the two differ, so seeing it in the Application's status
	// proves Argo CD assesses health with this setting.
	witness string
}

var (
	snippet = healthSetting{name: "our argocd-cm snippet", witness: "Credentials are readable"}
	builtIn = healthSetting{name: "Argo CD's built-in checks", witness: "Resource is up-to-date."}
	// health is the setting argocd-cm holds now.
	health healthSetting
)

// useHealth rewrites argocd-cm to h, asks Argo CD to refresh, and waits
// until the Application shows h's witness and ok accepts its status.
// The application-controller is not restarted: it reloads argocd-cm.
func useHealth(t *testing.T, h healthSetting, what string, ok func(argocd.AppStatus) error) argocd.AppStatus {
	t.Helper()
	began := time.Now()
	if err := argocd.SetSettings(context.Background(), kube, h.settings); err != nil {
		t.Fatal(err)
	}
	health = h
	refresh(t)
	s := waitApp(t, what+" under "+h.name, func(s argocd.AppStatus) error {
		if err := witnessed(s); err != nil {
			return err
		}
		return ok(s)
	})
	t.Logf("under %s in %s: %s", h.name, time.Since(began).Round(time.Second), s)
	return s
}

// witnessed accepts a status assessed with the current health setting.
func witnessed(s argocd.AppStatus) error {
	if r, _ := s.Resource("ClusterProviderConfig", "default"); r.HealthMessage != health.witness {
		return fmt.Errorf("not yet assessed with %s: %s", health.name, r)
	}
	return nil
}
