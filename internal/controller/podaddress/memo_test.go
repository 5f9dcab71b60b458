package podaddress

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// A PodAddress we created is waited for while the cache does not show it,
// for createLag at most, and no longer once the cache has shown it.
func TestWriteMemoUnseen(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "gs-0"}
	now := time.Unix(1000, 0)
	m := newWriteMemo()
	if m.unseen(key, now) {
		t.Fatal("a PodAddress we never created is unseen")
	}
	m.created(key, now)
	if !m.unseen(key, now.Add(time.Second)) {
		t.Error("a PodAddress created a second ago and not in the cache is not waited for")
	}
	if m.unseen(key, now.Add(createLag)) {
		t.Error("a PodAddress created createLag ago is still waited for")
	}

	m.created(key, now)
	pa := &v1alpha1.PodAddress{}
	pa.SetNamespace(key.Namespace)
	pa.SetName(key.Name)
	pa.SetResourceVersion("7")
	if m.behind(pa) {
		t.Error("the created version is taken for a stale one")
	}
	if m.unseen(key, now.Add(time.Second)) {
		t.Error("a PodAddress the cache has shown is still waited for once it is gone from it")
	}
}
