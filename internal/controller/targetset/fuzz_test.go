package targetset

import (
	"strings"
	"testing"
)

// FuzzParseExternalName: an external name parses to a listener (and a
// rule) that print back to it; "", "/x", "x/" and names with two "/" fail.
func FuzzParseExternalName(f *testing.F) {
	for _, s := range []string{"lbl-1", "lbl-1/loc-2", "lbl-1/", "/loc-2", "lbl-1/loc-2/x", "", "/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		id, err := parseExternalName(name)
		parts := strings.Split(name, "/")
		valid := parts[0] != "" && (len(parts) == 1 || len(parts) == 2 && parts[1] != "")
		if (err == nil) != valid {
			t.Fatalf("parseExternalName(%q) = %+v, %v; want valid=%v", name, id, err, valid)
		}
		if err == nil && id.String() != name {
			t.Fatalf("parseExternalName(%q) = %+v, which prints as %q", name, id, id.String())
		}
	})
}
