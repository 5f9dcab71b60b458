// Package docs checks that docs/architecture.md matches the code.
package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository, two levels up from this package.
const root = "../.."

// TestArchitectureNamesExistingPackages: every package path the page names
// (`apis/…`, `cmd/…`, `internal/…`) is a directory of Go code.
func TestArchitectureNamesExistingPackages(t *testing.T) {
	doc := read(t)
	paths := regexp.MustCompile("`((?:apis|cmd|internal)/[a-z0-9/]*[a-z0-9])/?`").FindAllStringSubmatch(doc, -1)
	if len(paths) < 20 {
		t.Fatalf("docs/architecture.md names %d package paths; expected the whole layout", len(paths))
	}
	for _, m := range paths {
		if !hasGo(filepath.Join(root, m[1])) {
			t.Errorf("docs/architecture.md names %s, which holds no Go package", m[1])
		}
	}
}

// TestArchitectureNamesEveryPackage: every package under internal/ is on
// the page, by its path or by its last elements (`listener`,
// `testenv/suite`) in the table of its group.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	doc := read(t)
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || !hasGo(path) || strings.Contains(path, "testdata") {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		for i := range parts {
			if strings.Contains(doc, "`"+strings.Join(parts[i:], "/")+"`") {
				return nil
			}
		}
		t.Errorf("docs/architecture.md does not name package %s", rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hasGo reports whether dir holds a Go file that is not a test.
func hasGo(dir string) bool {
	es, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range es {
		if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			return true
		}
	}
	return false
}
