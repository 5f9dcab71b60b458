package argocd

import (
	"context"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// A Repo is a Git repository served read-only over HTTP on loopback by
// `git http-backend` (Git's smart HTTP protocol, as a Git host serves it),
// for the repo-server to clone. Commit writes to it as a person pushing
// would.
type Repo struct {
	// URL is the repository's clone URL, an Application's repoURL.
	URL  string
	dir  string
	http *httptest.Server
}

// ServeRepo makes an empty repository under dir (branch main) and serves it.
func ServeRepo(ctx context.Context, dir string) (*Repo, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, err
	}
	work := filepath.Join(dir, "gitops")
	if err := os.MkdirAll(work, 0o700); err != nil {
		return nil, err
	}
	r := &Repo{dir: work}
	if err := r.git(ctx, "init", "--quiet", "--initial-branch=main"); err != nil {
		return nil, err
	}
	r.http = httptest.NewServer(&cgi.Handler{
		Path: git,
		Args: []string{"http-backend"},
		Env:  []string{"GIT_PROJECT_ROOT=" + dir, "GIT_HTTP_EXPORT_ALL=1"},
	})
	r.URL = r.http.URL + "/gitops"
	return r, nil
}

// Commit replaces the files of the repository with files (path within
// the repository → content) and commits them; it returns the commit.
func (r *Repo) Commit(ctx context.Context, message string, files map[string][]byte) (string, error) {
	if err := r.git(ctx, "rm", "-r", "--quiet", "--ignore-unmatch", "."); err != nil {
		return "", err
	}
	for p, b := range files {
		f := filepath.Join(r.dir, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			return "", err
		}
		if err := os.WriteFile(f, b, 0o600); err != nil {
			return "", err
		}
	}
	if err := r.git(ctx, "add", "--all"); err != nil {
		return "", err
	}
	if err := r.git(ctx, "-c", "user.name=platform", "-c", "user.email=platform@example.com",
		"commit", "--quiet", "--allow-empty", "-m", message); err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, "git", "-C", r.dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return "", err
	}
	return string(out[:len(out)-1]), nil
}

func (r *Repo) git(ctx context.Context, args ...string) error {
	return testenv.Command(ctx, r.dir, nil, nil, "git", args...)
}

// Close stops serving the repository.
func (r *Repo) Close() { r.http.Close() }
