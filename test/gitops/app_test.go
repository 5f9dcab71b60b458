package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/argocd"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// placeholders of gitops/ and examples/argocd/platform.yaml, and what the
// test puts in their place: a platform team's own registry, endpoint and
// repository.
func placeholders() *strings.Replacer {
	return strings.NewReplacer(
		"registry.example.com/tencentcloud-network/gameserver:local", gameImage,
		"registry.example.com/tencentcloud-network/", cluster.Node.Registry()+"/",
		"host: 127.0.0.1:9443", "host: "+cluster.Endpoint,
		"https://github.com/tencentcloud-network/provider-tencentcloud-network.git", repo.URL,
	)
}

// tree is gitops/ as the platform team's repository holds it, edit
// applied to each file (by name) first; an edit returning nil drops the
// file. Extra files are added as they are.
func tree(t *testing.T, edit map[string]func(string) string, extra map[string]string) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "gitops", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("gitops/*.yaml: %v (%d files)", err, len(files))
	}
	r := placeholders()
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := r.Replace(string(b))
		if e, ok := edit[filepath.Base(f)]; ok {
			if s = e(s); s == "" {
				continue
			}
		}
		out["gitops/"+filepath.Base(f)] = []byte(s)
	}
	for name, s := range extra {
		out["gitops/"+name] = []byte(s)
	}
	return out
}

// push commits files and tells Argo CD to look (the refresh annotation,
// what a Git host's webhook makes Argo CD's API server do), returning the
// commit.
func push(t *testing.T, message string, files map[string][]byte) string {
	t.Helper()
	ctx := context.Background()
	rev, err := repo.Commit(ctx, message, files)
	if err != nil {
		t.Fatal(err)
	}
	refresh(t)
	t.Logf("pushed %s: %s", rev[:8], message)
	return rev
}

func refresh(t *testing.T) {
	t.Helper()
	eventually(t, "refresh the Application", func() error {
		a := application()
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(a), a); kerrors.IsNotFound(err) {
			return nil // no Application yet: it reads Git when created
		} else if err != nil {
			return err
		}
		return kube.Patch(context.Background(), a, client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"argocd.argoproj.io/refresh":"normal"}}}`)))
	})
}

// application is the Application of examples/argocd/platform.yaml, its
// repoURL pointed at the test's repository.
func application() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("argoproj.io/v1alpha1")
	u.SetKind("Application")
	u.SetNamespace(argocd.Namespace)
	u.SetName("platform")
	return u
}

// An appStatus is what Argo CD reports on the Application.
type appStatus struct {
	Sync      string
	Revision  string
	Health    string
	Message   string
	Operation string
	Retries   int64
	Resources []resourceStatus
	Deleting  bool
}

// A resourceStatus is one entry of the Application's status.resources.
type resourceStatus struct {
	Kind, Namespace, Name string
	Sync                  string
	Health                string
	HealthMessage         string
	RequiresPruning       bool
}

func (r resourceStatus) String() string {
	s := fmt.Sprintf("%s %s/%s %s %s", r.Kind, r.Namespace, r.Name, r.Sync, r.Health)
	if r.HealthMessage != "" {
		s += " (" + r.HealthMessage + ")"
	}
	return s
}

func (s appStatus) String() string {
	var rs []string
	for _, r := range s.Resources {
		rs = append(rs, r.String())
	}
	rev := s.Revision
	if len(rev) > 8 {
		rev = rev[:8]
	}
	return fmt.Sprintf("sync %s at %s, health %s %q, operation %s (retries %d); resources: %s",
		s.Sync, rev, s.Health, s.Message, s.Operation, s.Retries, strings.Join(rs, "; "))
}

// resource finds kind/name in the status.
func (s appStatus) resource(kind, name string) (resourceStatus, bool) {
	for _, r := range s.Resources {
		if r.Kind == kind && r.Name == name {
			return r, true
		}
	}
	return resourceStatus{}, false
}

func status(ctx context.Context) (appStatus, error) {
	a := application()
	if err := kube.Get(ctx, client.ObjectKeyFromObject(a), a); err != nil {
		return appStatus{}, err
	}
	str := func(f ...string) string { v, _, _ := unstructured.NestedString(a.Object, f...); return v }
	s := appStatus{
		Sync:      str("status", "sync", "status"),
		Revision:  str("status", "sync", "revision"),
		Health:    str("status", "health", "status"),
		Message:   str("status", "operationState", "message"),
		Operation: str("status", "operationState", "phase"),
		Deleting:  a.GetDeletionTimestamp() != nil,
	}
	s.Retries, _, _ = unstructured.NestedInt64(a.Object, "status", "operationState", "retryCount")
	rs, _, _ := unstructured.NestedSlice(a.Object, "status", "resources")
	for _, r := range rs {
		m, _ := r.(map[string]any)
		get := func(f ...string) string { v, _, _ := unstructured.NestedString(m, f...); return v }
		prune, _, _ := unstructured.NestedBool(m, "requiresPruning")
		s.Resources = append(s.Resources, resourceStatus{
			Kind: get("kind"), Namespace: get("namespace"), Name: get("name"), Sync: get("status"),
			Health: get("health", "status"), HealthMessage: get("health", "message"), RequiresPruning: prune,
		})
	}
	return s, nil
}

// waitApp polls the Application's status until ok accepts it, and returns it.
func waitApp(t *testing.T, what string, ok func(appStatus) error) appStatus {
	t.Helper()
	var s appStatus
	eventually(t, what, func() error {
		var err error
		if s, err = status(context.Background()); err != nil {
			return err
		}
		if err := ok(s); err != nil {
			return fmt.Errorf("%w; Application: %s", err, s)
		}
		return nil
	})
	return s
}

// syncedHealthy accepts the Application synced to rev (any if empty),
// its last operation Succeeded, Healthy, and every resource Synced and
// Healthy (those Argo CD assesses).
func syncedHealthy(rev string) func(appStatus) error {
	return func(s appStatus) error {
		if s.Sync != "Synced" || (rev != "" && s.Revision != rev) || s.Health != "Healthy" || s.Operation != "Succeeded" {
			return fmt.Errorf("not Synced and Healthy at %.8s", rev)
		}
		for _, r := range s.Resources {
			if r.Sync != "Synced" || (r.Health != "" && r.Health != "Healthy") {
				return fmt.Errorf("%s", r)
			}
		}
		return nil
	}
}

// eventually polls fn for at most wait and fails the test with what it
// waited for and fn's last error.
func eventually(t testing.TB, what string, fn func() error) {
	t.Helper()
	if err := testenv.Eventually(context.Background(), wait, fn); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// created is when kind name (namespace ns) was created.
func created(t *testing.T, apiVersion, kind, ns, name string) metav1.Time {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u.GetCreationTimestamp()
}

// createApplication creates the Application of
// examples/argocd/platform.yaml, its repoURL the test's repository.
func createApplication(t *testing.T, edits ...func(*unstructured.Unstructured)) {
	t.Helper()
	objs, err := testenv.ReadYAML(filepath.Join(testenv.RepoRoot(), "examples", "argocd", "platform.yaml"))
	if err != nil || len(objs) != 1 {
		t.Fatalf("examples/argocd/platform.yaml: %d objects, %v", len(objs), err)
	}
	app := objs[0]
	if err := unstructured.SetNestedField(app.Object, repo.URL, "spec", "source", "repoURL"); err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		e(app)
	}
	if err := kube.Create(context.Background(), app); err != nil {
		t.Fatal(err)
	}
}
