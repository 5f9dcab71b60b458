package agent

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// tokens keeps the agent's own token of the management cluster in a file,
// which the hub clients read (rest.Config.BearerTokenFile re-reads it). The
// provider mints it, with the lifetime the WorkloadCluster allows, into the
// Secret AgentTokenSecret: the agent reads it there first with the
// bootstrap token, then with itself once two thirds of its life have
// passed, by when the provider has minted the next one.
type tokens struct {
	hub       *rest.Config // server and CA only
	namespace string
	cluster   string
	file      string
	bootstrap string // file of the bootstrap token
	log       logr.Logger
	now       func() time.Time
}

// claims are the times of a token, read from it without verifying it:
// the API server verifies; the agent only plans its renewal.
type claims struct {
	issued, expires time.Time
}

func readClaims(token string) (claims, error) {
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		return claims{}, fmt.Errorf("not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return claims{}, fmt.Errorf("cannot decode the token's claims: %w", err)
	}
	var c struct {
		Iat int64 `json:"iat"`
		Exp int64 `json:"exp"`
	}
	if err := json.Unmarshal(payload, &c); err != nil {
		return claims{}, fmt.Errorf("cannot read the token's claims: %w", err)
	}
	if c.Exp == 0 {
		return claims{}, fmt.Errorf("the token does not expire: not a bound ServiceAccount token")
	}
	return claims{issued: time.Unix(c.Iat, 0), expires: time.Unix(c.Exp, 0)}, nil
}

// renewAt is when a token of these claims is renewed.
func (c claims) renewAt() time.Time {
	return c.issued.Add(c.expires.Sub(c.issued) * 2 / 3)
}

// current returns the claims of the token in the file, if it holds one
// that has not reached its renewal time.
func (t *tokens) current() (claims, bool) {
	b, err := os.ReadFile(t.file)
	if err != nil {
		return claims{}, false
	}
	c, err := readClaims(string(b))
	if err != nil || !t.now().Before(c.expires) {
		return claims{}, false
	}
	return c, true
}

// ensure leaves a valid agent token in the file: the one there, or a new
// one obtained with the bootstrap token.
func (t *tokens) ensure(ctx context.Context) error {
	if _, ok := t.current(); ok {
		return nil
	}
	if t.bootstrap == "" {
		return fmt.Errorf("%s holds no valid token and no bootstrap token file is given", t.file)
	}
	b, err := os.ReadFile(t.bootstrap)
	if err != nil {
		return fmt.Errorf("cannot read the bootstrap token: %w", err)
	}
	cfg := rest.CopyConfig(t.hub)
	cfg.BearerToken = strings.TrimSpace(string(b))
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	t.log.Info("Registering with the bootstrap token", "namespace", t.namespace, "cluster", t.cluster)
	return t.request(ctx, cs)
}

// renew replaces the token with the provider's newer one, read with
// itself.
func (t *tokens) renew(ctx context.Context) error {
	cfg := rest.CopyConfig(t.hub)
	cfg.BearerTokenFile = t.file
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return t.request(ctx, cs)
}

// request reads the agent's token from the hub and writes it, if it
// expires later than the one the file holds.
func (t *tokens) request(ctx context.Context, cs kubernetes.Interface) error {
	// The bootstrap identity may read its own WorkloadCluster only:
	// checking it first says "wrong cluster or namespace" plainly.
	wc := &v1alpha1.WorkloadCluster{}
	if err := cs.CoreV1().RESTClient().Get().AbsPath("/apis", v1alpha1.SchemeGroupVersion.Group, v1alpha1.SchemeGroupVersion.Version,
		"namespaces", t.namespace, "workloadclusters", t.cluster).Do(ctx).Into(wc); err != nil {
		return fmt.Errorf("cannot get WorkloadCluster %s/%s of the management cluster: %w", t.namespace, t.cluster, err)
	}
	name := v1alpha1.AgentTokenSecret(t.cluster)
	sec, err := cs.CoreV1().Secrets(t.namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("cannot get the agent's token (Secret %s/%s): %w", t.namespace, name, err)
	}
	token := string(sec.Data[v1alpha1.AgentTokenKey])
	next, err := readClaims(token)
	if err != nil {
		return fmt.Errorf("secret %s/%s: %w", t.namespace, name, err)
	}
	if cur, ok := t.current(); ok && !next.expires.After(cur.expires) {
		return fmt.Errorf("secret %s/%s holds no newer token yet (it expires at %s)", t.namespace, name, next.expires.Format(time.RFC3339))
	}
	// Written whole or not at all: the hub clients may read it any time.
	tmp, err := os.CreateTemp(filepath.Dir(t.file), ".token-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.WriteString(token); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), t.file); err != nil {
		return err
	}
	t.log.Info("Obtained the agent's token", "expires", next.expires)
	return nil
}

// Start renews the token before it expires, until ctx ends. A failed
// renewal is retried every retry until the token runs out.
func (t *tokens) Start(ctx context.Context) error {
	const retry = 10 * time.Second
	for {
		wait := retry
		if c, ok := t.current(); ok {
			wait = max(c.renewAt().Sub(t.now()), 0)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		if c, ok := t.current(); ok && t.now().Before(c.renewAt()) {
			continue
		}
		if err := t.renew(ctx); err != nil {
			t.log.Error(err, "Cannot renew the agent's token; retrying")
		}
	}
}

// NeedLeaderElection is false: the agent runs alone, without election.
func (t *tokens) NeedLeaderElection() bool { return false }
