package podaddress

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzInstanceID: a node's providerID yields the CVM instance after its
// last "/" when that names one (ins-…), and otherwise an error that quotes
// the providerID.
func FuzzInstanceID(f *testing.F) {
	for _, s := range []string{"qcloud:///800002/ins-abcdefgh", "tencentcloud:///ap-guangzhou-3/ins-1", "ins-1", "kind://docker/kind/node", "qcloud:///800002/", "", "/", "ins-", "a/ins-1/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, providerID string) {
		id, err := instanceID(providerID)
		last := providerID[strings.LastIndex(providerID, "/")+1:]
		if err != nil {
			if strings.HasPrefix(last, "ins-") || !strings.Contains(err.Error(), strconv.Quote(providerID)) {
				t.Fatalf("instanceID(%q): %v", providerID, err)
			}
			return
		}
		if id != last || !strings.HasPrefix(id, "ins-") || !strings.HasSuffix(providerID, id) {
			t.Fatalf("instanceID(%q) = %q, want the ins-… after the last /", providerID, id)
		}
	})
}
