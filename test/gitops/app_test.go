package gitops

import (
	"context"
	"fmt"
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

// tree is gitops/ as the platform team's repository holds it, its
// placeholders the test's, edit applied to each file (by name) first; an
// edit returning "" drops the file. Extra files are added as they are.
func tree(t *testing.T, edit map[string]func(string) string, extra map[string]string) map[string][]byte {
	t.Helper()
	files, err := argocd.Folder(argocd.Placeholders(gameImage, cluster.Node.Registry(), cluster.Endpoint, repo.URL))
	if err != nil {
		t.Fatal(err)
	}
	for path, b := range files {
		if e, ok := edit[strings.TrimPrefix(path, "gitops/")]; ok {
			if s := e(string(b)); s == "" {
				delete(files, path)
			} else {
				files[path] = []byte(s)
			}
		}
	}
	for name, s := range extra {
		files["gitops/"+name] = []byte(s)
	}
	return files
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

// application is the Application of examples/argocd/platform.yaml, to
// get, patch or delete.
func application() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("argoproj.io/v1alpha1")
	u.SetKind("Application")
	u.SetNamespace(argocd.Namespace)
	u.SetName(argocd.AppName)
	return u
}

func status(ctx context.Context) (argocd.AppStatus, error) {
	return argocd.ReadApp(ctx, kube, argocd.AppName)
}

// waitApp polls the Application's status until ok accepts it, and returns it.
func waitApp(t *testing.T, what string, ok func(argocd.AppStatus) error) argocd.AppStatus {
	t.Helper()
	var s argocd.AppStatus
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

// syncedHealthy is AppStatus.SyncedHealthy, for waitApp.
func syncedHealthy(rev string) func(argocd.AppStatus) error {
	return func(s argocd.AppStatus) error { return s.SyncedHealthy(rev) }
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
	app, err := argocd.Application(repo.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		e(app)
	}
	if err := kube.Create(context.Background(), app); err != nil {
		t.Fatal(err)
	}
}
