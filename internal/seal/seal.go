// Package seal signs the provider's records (the PodAddresses it writes)
// with a key only the provider reads, and tells a record it wrote from one
// anyone else wrote. Crossplane's RBAC manager lets a namespace's editor
// write every kind of the provider, status included, so neither RBAC nor
// the object itself says who wrote a PodAddress; its seal does. A record
// without a valid seal is ignored: no target is deregistered, no slot
// claimed and no EIP released on its word.
package seal

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// MaxCreateSkew is how far the time a create record was sealed at may be
// from the PodAddress's creation time the API server set. A create record
// copied into a PodAddress made later is refused; the status, sealed with
// the PodAddress's uid, needs no such bound.
const MaxCreateSkew = 2 * time.Minute

// A Sealer signs and checks the provider's records.
type Sealer struct {
	key []byte
	// sealedAll is set once every record written before sealing began
	// carries a seal; until then an unsealed record is the provider's.
	sealedAll atomic.Bool

	mu      sync.Mutex
	ignored map[types.UID]string
}

// New returns a Sealer with key. sealedAll says that every record already
// carries a seal (see Migrator).
func New(key []byte, sealedAll bool) *Sealer {
	s := &Sealer{key: key, ignored: map[types.UID]string{}}
	s.sealedAll.Store(sealedAll)
	return s
}

// Ephemeral returns a Sealer whose key lives only in this process: the
// records it seals are trusted by it alone (unit tests, tools).
func Ephemeral() *Sealer {
	k := make([]byte, keySize)
	if _, err := rand.Read(k); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return New(k, true)
}

// SealedAll reports whether every record written before sealing began
// carries a seal; the PodAddress controller acts only from then on.
func (s *Sealer) SealedAll() bool { return s.sealedAll.Load() }

func (s *Sealer) mac(parts ...string) string {
	h := hmac.New(sha256.New, s.key)
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// statusMAC signs pa's status, but for its seal, with pa's identity: a
// sealed status copied into another PodAddress (another uid) is not
// sealed there.
func (s *Sealer) statusMAC(pa *v1alpha1.PodAddress) (string, error) {
	st := pa.Status
	st.Seal = ""
	raw, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	return s.mac("status/v1", string(pa.GetUID()), pa.GetNamespace(), pa.GetName(), string(raw)), nil
}

// Seal signs pa's status; pa must have been created (it has its uid).
// Every status the provider writes is sealed just before the write.
func (s *Sealer) Seal(pa *v1alpha1.PodAddress) error {
	if pa.GetUID() == "" {
		return fmt.Errorf("cannot seal the status of PodAddress %s/%s before it is created", pa.GetNamespace(), pa.GetName())
	}
	m, err := s.statusMAC(pa)
	if err != nil {
		return err
	}
	pa.Status.Seal = m
	return nil
}

func (s *Sealer) createdMAC(pa *v1alpha1.PodAddress, at string) string {
	return s.mac("created/v1", pa.GetNamespace(), pa.GetName(), at, pa.GetAnnotations()[v1alpha1.AnnotationCreatedBindings])
}

// SealCreated signs pa's create record, made at now, before the create.
func (s *Sealer) SealCreated(pa *v1alpha1.PodAddress, now time.Time) {
	at := strconv.FormatInt(now.Unix(), 10)
	a := pa.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[v1alpha1.AnnotationCreatedSeal] = at + "." + s.createdMAC(pa, at)
	pa.SetAnnotations(a)
}

// Check returns why pa's records are not the provider's; nil when they
// are, or when pa records nothing.
func (s *Sealer) Check(pa *v1alpha1.PodAddress) error {
	if pa.StatusWritten() {
		if pa.Status.Seal == "" && !s.SealedAll() {
			return nil // written before sealing began
		}
		m, err := s.statusMAC(pa)
		if err != nil {
			return err
		}
		if !hmac.Equal([]byte(m), []byte(pa.Status.Seal)) {
			return fmt.Errorf("its status was not written by the provider (no valid %s)", "status.seal")
		}
		return nil
	}
	if _, ok := pa.GetAnnotations()[v1alpha1.AnnotationCreatedBindings]; !ok {
		return nil
	}
	v, ok := pa.GetAnnotations()[v1alpha1.AnnotationCreatedSeal]
	if !ok && !s.SealedAll() {
		return nil
	}
	at, m, _ := strings.Cut(v, ".")
	unix, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || !hmac.Equal([]byte(s.createdMAC(pa, at)), []byte(m)) {
		return fmt.Errorf("its %s record was not written by the provider (no valid %s)", v1alpha1.AnnotationCreatedBindings, v1alpha1.AnnotationCreatedSeal)
	}
	if d := pa.GetCreationTimestamp().Sub(time.Unix(unix, 0)); d > MaxCreateSkew || d < -MaxCreateSkew {
		return fmt.Errorf("its %s record was sealed for a PodAddress made at another time (%s apart)", v1alpha1.AnnotationCreatedBindings, d.Round(time.Second))
	}
	return nil
}

// Trust drops from pa, in memory, records the provider did not write:
// the whole status, and the create record, so that nothing is read from
// either. It returns why, or nil when pa's records are the provider's;
// the reason is kept for Ignored.
func (s *Sealer) Trust(pa *v1alpha1.PodAddress) error {
	err := s.Check(pa)
	if err == nil {
		return nil
	}
	pa.Status = v1alpha1.PodAddressStatus{}
	a := pa.GetAnnotations()
	delete(a, v1alpha1.AnnotationCreatedBindings)
	delete(a, v1alpha1.AnnotationCreatedSeal)
	if uid := pa.GetUID(); uid != "" {
		s.mu.Lock()
		s.ignored[uid] = err.Error()
		s.mu.Unlock()
	}
	return err
}

// Ignored returns, once, why records of the PodAddress uid were dropped by
// Trust.
func (s *Sealer) Ignored(uid types.UID) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	why, ok := s.ignored[uid]
	delete(s.ignored, uid)
	return why, ok
}
