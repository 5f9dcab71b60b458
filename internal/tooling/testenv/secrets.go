package testenv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator"
)

// SessionSecretID, SessionSecretKey and SessionToken are a temporary
// (STS-style) credential the suites give the provider, so that a token is
// in play and a leak of it is caught.
const (
	SessionSecretID  = "AKIDSESSIONTEST000000000000000000"
	SessionSecretKey = "sessionsecretkey-do-not-log-0000"
	SessionToken     = "sessiontoken-do-not-log-0123456789abcdef"
)

// SessionCredential is the session credential as the emulator accepts it.
func SessionCredential() emulator.Credential {
	return emulator.Credential{SecretID: SessionSecretID, SecretKey: SessionSecretKey, Token: SessionToken}
}

// A SecretScan checks that secret values never reach the provider's log or
// the cluster's Events. The provider logs at every level (debug included)
// into the scan, which keeps no log, only counts and the lines that leak;
// errors still go to stderr as before.
type SecretScan struct {
	secrets []string

	mu     sync.Mutex
	lines  int
	events int
	leaks  []string
}

// NewSecretScan scans for these values.
func NewSecretScan(secrets ...string) *SecretScan {
	return &SecretScan{secrets: secrets}
}

// Write takes log output: each line is counted and checked.
func (s *SecretScan) Write(p []byte) (int, error) {
	n := bytes.Count(p, []byte{'\n'})
	if n == 0 {
		n = 1
	}
	s.check("log", string(p), n)
	return len(p), nil
}

// Sync is part of zapcore.WriteSyncer.
func (s *SecretScan) Sync() error { return nil }

func (s *SecretScan) check(what, text string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if what == "event" {
		s.events += n
	} else {
		s.lines += n
	}
	for _, v := range s.secrets {
		if strings.Contains(text, v) {
			// Never print the secret itself, even in the failure.
			s.leaks = append(s.leaks, fmt.Sprintf("%s: %s", what, strings.ReplaceAll(text, v, "<SECRET>")))
		}
	}
}

// Logger is a logger for ctrl.SetLogger: every level into the scan, errors
// also to stderr. Sampling is off, so that no line escapes the scan.
func (s *SecretScan) Logger() logr.Logger {
	enc := zap.NewProductionEncoderConfig()
	all := zap.LevelEnablerFunc(func(zapcore.Level) bool { return true })
	core := zapcore.NewTee(
		zapcore.NewCore(zapcore.NewJSONEncoder(enc), s, all),
		zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(os.Stderr), zapcore.ErrorLevel),
	)
	return zapr.NewLogger(zap.New(core))
}

// CrossplaneLogger is the crossplane-runtime logger of the managed
// resource reconcilers, into the same scan.
func (s *SecretScan) CrossplaneLogger() logging.Logger {
	return logging.NewLogrLogger(s.Logger())
}

// ScanFile checks a log file, e.g. that of a provider process.
func (s *SecretScan) ScanFile(path string) error {
	f, err := os.Open(path) //nolint:gosec // G304: a log file the test itself created.
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		s.check("log "+path, sc.Text(), 1)
	}
	return sc.Err()
}

// ScanEvents checks every Event of every namespace, whole (reason,
// message, annotations and all).
func (s *SecretScan) ScanEvents(ctx context.Context, kube client.Reader) error {
	var l corev1.EventList
	if err := kube.List(ctx, &l); err != nil {
		return err
	}
	for i := range l.Items {
		b, err := json.Marshal(&l.Items[i])
		if err != nil {
			return err
		}
		s.check("event", string(b), 1)
	}
	return nil
}

// Result says how much was checked, and is an error if a secret was seen.
func (s *SecretScan) Result() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	summary := fmt.Sprintf("secret scan: %d log lines and %d Events checked for %d secret values, %d leaks", s.lines, s.events, len(s.secrets), len(s.leaks))
	if len(s.leaks) == 0 {
		return summary, nil
	}
	const show = 5
	leaks := s.leaks
	if len(leaks) > show {
		leaks = leaks[:show]
	}
	return summary, fmt.Errorf("%s; the first:\n%s", summary, strings.Join(leaks, "\n"))
}

// WithSessionCredentials makes a credentials Secret of the examples hold
// the session credential: SessionSecretID, SessionSecretKey and
// SessionToken. The emulator must accept it (Config.Credentials).
func WithSessionCredentials(u *unstructured.Unstructured) {
	if u.GetKind() != "Secret" {
		return
	}
	_ = unstructured.SetNestedStringMap(u.Object, map[string]string{
		"secretId":  SessionSecretID,
		"secretKey": SessionSecretKey,
		"token":     SessionToken,
	}, "stringData")
}
