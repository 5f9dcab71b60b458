package gitops

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/argocd"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/argocdhealth"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/okg"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

var update = flag.Bool("update", false, "record the objects of ours Argo CD assessed as testdata of internal/tooling/argocdhealth")

// recorded are the objects written with -update in this run, by
// kind/namespace/name/moment: each once, under the first setting seen.
var recorded = map[string]bool{}

// seenByArgoCD checks that our tooling computes, for every resource of the
// Application of a kind of ours that Argo CD gave a health, what Argo CD
// showed for it, under the setting argocd-cm holds now: under our snippet
// the script of its kind (argocdhealth.Shown); under the built-in checks
// argocdhealth.BuiltIn, and Argo CD's own script for *.crossplane.io run
// from its module over the same object. The Application and the live
// objects are read at different instants, so it polls until they agree
// (bounded), and fails naming the objects and both answers. With -update
// it records the objects as
// testdata/<group>_<Kind>/<Status>-seen-by-argocd-<moment>-<name>.yaml.
func seenByArgoCD(t *testing.T, moment string) {
	t.Helper()
	ctx := context.Background()
	began := time.Now()
	var objs []seenObject
	eventually(t, "our health as Argo CD's under "+health.name+" at "+moment, func() error {
		s, err := status(ctx)
		if err != nil {
			return err
		}
		if err := witnessed(s); err != nil {
			return err
		}
		objs = nil
		var errs []error
		for _, r := range s.Resources {
			k, ours := argocdhealth.Lookup(r.Group, r.Kind)
			if !ours || r.Health == "" {
				continue
			}
			o, err := assessLive(ctx, k, r)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			objs = append(objs, o)
		}
		if len(objs) == 0 && len(errs) == 0 {
			return errors.New("no resource of ours with a health in the Application")
		}
		return errors.Join(errs...)
	})
	for _, o := range objs {
		t.Logf("  %s: Argo CD and ours agree", o.r)
		key := strings.Join([]string{o.k.Key(), o.r.Namespace, o.r.Name, moment}, "/")
		if *update && !recorded[key] {
			recorded[key] = true
			record(t, o.k, o.u, o.r.Health, "seen-by-argocd-"+moment+"-"+o.r.Name)
		}
	}
	t.Logf("our health equals Argo CD's under %s on %d objects of ours at %s, checked in %s",
		health.name, len(objs), moment, time.Since(began).Round(time.Millisecond))
}

// A seenObject is a resource of ours, its kind and the live object.
type seenObject struct {
	r argocd.ResourceStatus
	k argocdhealth.Kind
	u *unstructured.Unstructured
}

// assessLive reads r's live object and checks that our tooling shows for it
// what Argo CD showed: the status, and the message where Argo CD gives one.
func assessLive(ctx context.Context, k argocdhealth.Kind, r argocd.ResourceStatus) (seenObject, error) {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(r.Group + "/" + r.Version)
	u.SetKind(r.Kind)
	if err := kube.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, u); err != nil {
		return seenObject{}, fmt.Errorf("%s: %w", r, err)
	}
	var ours argocdhealth.Status
	if health.name == snippet.name {
		script, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), argocdhealth.ScriptDir, k.Script))
		if err != nil {
			return seenObject{}, err
		}
		if ours, err = argocdhealth.Shown(string(script), u.Object); err != nil {
			return seenObject{}, fmt.Errorf("%s: %s: %w", r, k.Script, err)
		}
	} else {
		ours = argocdhealth.BuiltIn(u.Object)
		if _, deleting := argocdhealth.PendingDeletion(u.Object); !deleting {
			theirs, err := argoCDsBuiltIn(u.Object)
			if err != nil {
				return seenObject{}, fmt.Errorf("%s: %w", r, err)
			}
			if theirs != ours {
				return seenObject{}, fmt.Errorf("%s: Argo CD %s's built-in script says %+v on the live object, BuiltIn %+v", r, argocd.Version, theirs, ours)
			}
		}
	}
	if ours.Status != r.Health || (r.HealthMessage != "" && ours.Message != r.HealthMessage) {
		return seenObject{}, fmt.Errorf("%s %s/%s: Argo CD shows %s (%q) under %s, ours %s (%q)",
			k.Key(), r.Namespace, r.Name, r.Health, r.HealthMessage, health.name, ours.Status, ours.Message)
	}
	return seenObject{r, k, u}, nil
}

// argoCDsScript is Argo CD's own health script for *.crossplane.io, read
// once from the module test/gitops runs.
var argoCDsScript = sync.OnceValues(func() (string, error) {
	dir, err := okg.ModuleDir(context.Background(), argocd.Module, argocd.Version)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, "resource_customizations", "_.crossplane.io", "_", "health.lua"))
	return string(b), err
})

// argoCDsBuiltIn runs argoCDsScript over obj.
func argoCDsBuiltIn(obj map[string]any) (argocdhealth.Status, error) {
	script, err := argoCDsScript()
	if err != nil {
		return argocdhealth.Status{}, err
	}
	return argocdhealth.Assess(script, obj)
}

// record writes u as testdata of internal/tooling/argocdhealth, without
// what the API server and kubectl add that no health reads.
func record(t *testing.T, k argocdhealth.Kind, u *unstructured.Unstructured, status, moment string) {
	t.Helper()
	u = u.DeepCopy()
	u.SetManagedFields(nil)
	u.SetUID("")
	u.SetResourceVersion("")
	a := u.GetAnnotations()
	delete(a, "kubectl.kubernetes.io/last-applied-configuration")
	u.SetAnnotations(a)
	b, err := yaml.Marshal(u.Object)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(testenv.RepoRoot(), "internal", "tooling", "argocdhealth", "testdata", argocdhealth.RecordedName(k, status, moment))
	if err := os.MkdirAll(filepath.Dir(f), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("  recorded %s", f)
}
