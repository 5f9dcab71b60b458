package argocd

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// AppName is the Application of examples/argocd/platform.yaml.
const AppName = "platform"

// Application is the Application of examples/argocd/platform.yaml, its
// repoURL pointed at repoURL.
func Application(repoURL string) (*unstructured.Unstructured, error) {
	objs, err := testenv.ReadYAML(filepath.Join(testenv.RepoRoot(), "examples", "argocd", "platform.yaml"))
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 {
		return nil, fmt.Errorf("examples/argocd/platform.yaml: %d objects, want the Application", len(objs))
	}
	app := objs[0]
	return app, unstructured.SetNestedField(app.Object, repoURL, "spec", "source", "repoURL")
}

// Folder is gitops/ as a platform team's repository holds it (path
// "gitops/<file>"), each file's placeholders replaced by r.
func Folder(r *strings.Replacer) (map[string][]byte, error) {
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "gitops", "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no gitops/*.yaml")
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out["gitops/"+filepath.Base(f)] = []byte(r.Replace(string(b)))
	}
	return out, nil
}

// Placeholders replaces what gitops/ and examples/argocd/platform.yaml
// leave to a platform team: the game server's image, their registry
// mirror, the ClusterProviderConfig's endpoint and their repository.
func Placeholders(gameImage, registry, endpoint, repoURL string) *strings.Replacer {
	return strings.NewReplacer(
		"registry.example.com/tencentcloud-network/gameserver:local", gameImage,
		"registry.example.com/tencentcloud-network/", registry+"/",
		"host: 127.0.0.1:9443", "host: "+endpoint,
		"https://github.com/tencentcloud-network/provider-tencentcloud-network.git", repoURL,
	)
}

// An AppStatus is what Argo CD wrote in an Application's status.
type AppStatus struct {
	Sync      string
	Revision  string
	Health    string
	Message   string
	Operation string
	Retries   int64
	Resources []ResourceStatus
	Deleting  bool
}

// A ResourceStatus is one entry of the Application's status.resources.
type ResourceStatus struct {
	Group, Version        string
	Kind, Namespace, Name string
	Sync                  string
	Health                string
	HealthMessage         string
	RequiresPruning       bool
}

func (r ResourceStatus) String() string {
	s := fmt.Sprintf("%s %s/%s %s %s", r.Kind, r.Namespace, r.Name, r.Sync, r.Health)
	if r.HealthMessage != "" {
		s += " (" + r.HealthMessage + ")"
	}
	return s
}

func (s AppStatus) String() string {
	var rs []string
	for _, r := range s.Resources {
		rs = append(rs, r.String())
	}
	return fmt.Sprintf("sync %s at %s, health %s %q, operation %s (retries %d); resources: %s",
		s.Sync, short(s.Revision), s.Health, s.Message, s.Operation, s.Retries, strings.Join(rs, "; "))
}

// Tree is the Application and its resources as a table: kind, name, sync,
// health and health message of each, as Argo CD wrote them.
func (s AppStatus) Tree() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "KIND\tNAME\tSYNC\tHEALTH\tMESSAGE")
	_, _ = fmt.Fprintf(w, "Application\t%s/%s\t%s (%s)\t%s\toperation %s\n", Namespace, AppName, s.Sync, short(s.Revision), s.Health, s.Operation)
	for _, r := range s.Resources {
		name := r.Name
		if r.Namespace != "" {
			name = r.Namespace + "/" + name
		}
		h := r.Health
		if h == "" {
			h = "-"
		}
		_, _ = fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", r.Kind, name, r.Sync, h, r.HealthMessage)
	}
	_ = w.Flush()
	return b.String()
}

func short(rev string) string {
	if len(rev) > 8 {
		return rev[:8]
	}
	return rev
}

// Resource finds kind/name in the status.
func (s AppStatus) Resource(kind, name string) (ResourceStatus, bool) {
	for _, r := range s.Resources {
		if r.Kind == kind && r.Name == name {
			return r, true
		}
	}
	return ResourceStatus{}, false
}

// ReadApp reads the status of the Application name.
func ReadApp(ctx context.Context, kube client.Client, name string) (AppStatus, error) {
	a := &unstructured.Unstructured{}
	a.SetAPIVersion("argoproj.io/v1alpha1")
	a.SetKind("Application")
	if err := kube.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: name}, a); err != nil {
		return AppStatus{}, err
	}
	str := func(f ...string) string { v, _, _ := unstructured.NestedString(a.Object, f...); return v }
	s := AppStatus{
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
		s.Resources = append(s.Resources, ResourceStatus{
			Group: get("group"), Version: get("version"), Kind: get("kind"), Namespace: get("namespace"), Name: get("name"), Sync: get("status"),
			Health: get("health", "status"), HealthMessage: get("health", "message"), RequiresPruning: prune,
		})
	}
	return s, nil
}

// SyncedHealthy accepts the Application synced to rev (any if empty), its
// last operation Succeeded, Healthy, and every resource Synced and Healthy
// (those Argo CD assesses).
func (s AppStatus) SyncedHealthy(rev string) error {
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

// Snippet is the data of docs/argocd/argocd-cm.yaml: our health scripts,
// as argocd-cm keys.
func Snippet() (map[string]string, error) {
	objs, err := testenv.ReadYAML(filepath.Join(testenv.RepoRoot(), "docs", "argocd", "argocd-cm.yaml"))
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 {
		return nil, fmt.Errorf("docs/argocd/argocd-cm.yaml: %d objects, want the ConfigMap", len(objs))
	}
	data, _, _ := unstructured.NestedStringMap(objs[0].Object, "data")
	if len(data) == 0 {
		return nil, fmt.Errorf("docs/argocd/argocd-cm.yaml has no data")
	}
	return data, nil
}
