package benchpeer

import (
	"os"
	"path/filepath"
)

// The peer imports only agones.dev/agones/pkg/apis/agones/v1, for the
// GameServer kind: it adds it to its scheme when the cluster serves the
// Agones CRDs (the benchmark's does not), caches it, reads it and patches
// its annotations. The module proxy refuses the agones module, so the
// build replaces it with this stand-in: that package with just a
// GameServer made of object metadata, its list, and AddToScheme. Written
// here from the peer's uses, not taken from Agones.
const standinGoMod = `module agones.dev/agones

go 1.24

require k8s.io/apimachinery v0.36.3
`

const standinTypes = `// Package v1 is a benchmark stand-in for the Agones API package: only the
// GameServer kind as object metadata, which is all the peer uses.
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var SchemeGroupVersion = schema.GroupVersion{Group: "agones.dev", Version: "v1"}

type GameServer struct {
	metav1.TypeMeta   ` + "`json:\",inline\"`" + `
	metav1.ObjectMeta ` + "`json:\"metadata,omitempty\"`" + `
}

func (in *GameServer) DeepCopyObject() runtime.Object {
	out := &GameServer{TypeMeta: in.TypeMeta}
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

type GameServerList struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	metav1.ListMeta ` + "`json:\"metadata,omitempty\"`" + `
	Items           []GameServer ` + "`json:\"items\"`" + `
}

func (in *GameServerList) DeepCopyObject() runtime.Object {
	out := &GameServerList{TypeMeta: in.TypeMeta}
	in.ListMeta.DeepCopyInto(&out.ListMeta)
	for i := range in.Items {
		out.Items = append(out.Items, *in.Items[i].DeepCopyObject().(*GameServer))
	}
	return out
}

func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &GameServer{}, &GameServerList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
`

// writeStandin writes the stand-in module into dir.
func writeStandin(dir string) error {
	pkg := filepath.Join(dir, "pkg", "apis", "agones", "v1")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(standinGoMod), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(pkg, "types.go"), []byte(standinTypes), 0o644)
}
