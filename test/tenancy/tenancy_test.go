package tenancy

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

var writeDoc = flag.Bool("write-doc", false, "rewrite the table in docs/security.md from the cases")

// Who makes a request.
type Who string

// The people and programs of the suite.
const (
	// TenantA and TenantB are users with namespace rights only (Pods, and
	// the provider's tenant role) in NamespaceA and NamespaceB.
	TenantA Who = "tenant-a"
	TenantB Who = "tenant-b"
	// Admin is the platform team (system:masters).
	Admin Who = "admin"
	// Agent is a workload cluster's agent, with the identity its
	// WorkloadCluster gave it.
	Agent Who = "agent"
	// Node is a node's identity (its kubelet or a DaemonSet's Pod-bound
	// token).
	Node Who = "node"
	// Anonymous presents no credentials.
	Anonymous Who = "anonymous"
)

// An Attack is one request someone could make that must be refused.
type Attack struct {
	Name string
	Who  Who
	// What was tried, in one line for the table.
	What string
	// Try makes the request and returns the refusal it met: an API error's
	// message, the condition or Event the provider wrote, an HTTP body. It
	// returns an error when the request was not refused, or the harness
	// failed.
	Try func(ctx context.Context, t *testing.T) (refusal string, err error)
	// Want is part of the refusal, what a person would read to know why.
	Want string
	// Cleanup, if set, removes what the attack left in the attacker's own
	// namespace, after the comparison.
	Cleanup func(ctx context.Context, t *testing.T)
}

// An Allowed path is what the same people must still be able to do.
type Allowed struct {
	Name string
	Who  Who
	What string
	Try  func(ctx context.Context, t *testing.T) error
}

var (
	attacks []Attack
	allowed []Allowed
)

// attack registers attacks; call it from an init function.
func attack(a ...Attack) { attacks = append(attacks, a...) }

// allow registers allowed paths; call it from an init function.
func allow(a ...Allowed) { allowed = append(allowed, a...) }

// A row of the table docs/security.md shows.
type row struct{ name, who, what, result string }

// TestTenancy runs every attack, comparing the cloud and the objects of
// the people attacked before and after, then every allowed path, and
// prints the table.
func TestTenancy(t *testing.T) {
	w := setup(t)
	ctx := context.Background()
	var rows []row
	for _, a := range attacks {
		ok := t.Run("attack/"+a.Name, func(t *testing.T) {
			before := w.snapshot(ctx, t, a.Who)
			refusal, err := a.Try(ctx, t)
			if err != nil {
				t.Fatalf("%s by %s (%s) was not refused as it should be: %v", a.Name, a.Who, a.What, err)
			}
			if !strings.Contains(refusal, a.Want) {
				t.Fatalf("%s: refused with %q, which does not say %q", a.Name, refusal, a.Want)
			}
			t.Logf("refused: %s", refusal)
			// What a refused request started may still be under way: the
			// comparison waits a while for the state to settle back.
			if err := testenv.Eventually(ctx, 20*time.Second, func() error {
				return before.same(w.snapshot(ctx, t, a.Who))
			}); err != nil {
				t.Fatalf("%s changed what it must not: %v", a.Name, err)
			}
			if a.Cleanup != nil {
				a.Cleanup(ctx, t)
			}
		})
		result := "refused: " + a.Want
		if !ok {
			result = "NOT REFUSED"
		}
		rows = append(rows, row{a.Name, string(a.Who), a.What, result})
	}
	for _, a := range allowed {
		ok := t.Run("allowed/"+a.Name, func(t *testing.T) {
			if err := a.Try(ctx, t); err != nil {
				t.Fatalf("%s by %s (%s) failed: %v", a.Name, a.Who, a.What, err)
			}
		})
		result := "allowed"
		if !ok {
			result = "FAILED"
		}
		rows = append(rows, row{a.Name, string(a.Who), a.What, result})
	}
	table := render(rows)
	fmt.Print("\n" + table)
	if t.Failed() {
		return
	}
	if len(attacks) < 25 {
		t.Errorf("%d attack cases; the suite promises at least 25", len(attacks))
	}
	byEditors := 0
	for _, a := range attacks {
		if _, ok := editors[a.Who]; ok {
			byEditors++
		}
	}
	if byEditors < 30 {
		t.Errorf("%d attack cases by a crossplane-edit tenant; the suite promises at least 30", byEditors)
	}
	checkDoc(t, table)
}

func render(rows []row) string {
	var b strings.Builder
	b.WriteString("| case | who | what was tried | result |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", r.name, r.who, strings.ReplaceAll(r.what, "|", `\|`), strings.ReplaceAll(r.result, "|", `\|`))
	}
	return b.String()
}

// The table sits between these lines of docs/security.md.
const (
	tableStart = "<!-- tenancy table: go test ./test/tenancy -run TestTenancy -args -write-doc -->\n"
	tableEnd   = "<!-- end of tenancy table -->\n"
)

// checkDoc fails when docs/security.md does not show table, or rewrites it
// there with -write-doc.
func checkDoc(t *testing.T, table string) {
	t.Helper()
	path := filepath.Join(testenv.RepoRoot(), "docs", "security.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(doc, []byte(tableStart))
	j := bytes.Index(doc, []byte(tableEnd))
	if i < 0 || j < i {
		t.Fatalf("%s has no tenancy table between %q and %q", path, tableStart, tableEnd)
	}
	got := string(doc[i+len(tableStart) : j])
	if got == table {
		return
	}
	if *writeDoc {
		out := string(doc[:i+len(tableStart)]) + table + string(doc[j:])
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil { //nolint:gosec // a docs page
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/security.md's tenancy table differs from the cases; run go test ./test/tenancy -run TestTenancy -args -write-doc\nwant:\n%s", table)
}

// jsonOf is v as indented JSON, for comparisons that print well.
func jsonOf(v any) string {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}
