package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/workloadcluster"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

func TestReadClaims(t *testing.T) {
	// Header and signature are not read; the claims are {"iat":1000,"exp":4000}.
	c, err := readClaims("e30.eyJpYXQiOjEwMDAsImV4cCI6NDAwMH0.c2ln")
	if err != nil {
		t.Fatal(err)
	}
	if c.issued.Unix() != 1000 || c.expires.Unix() != 4000 || c.renewAt().Unix() != 3000 {
		t.Errorf("claims %+v renew at %v, want issued 1000, expires 4000, renewed at 3000", c, c.renewAt().Unix())
	}
	for _, bad := range []string{"", "a.b", "e30.eyJpYXQiOjEwMDB9.c2ln" /* no exp */, "e30.!!.c2ln"} {
		if _, err := readClaims(bad); err == nil {
			t.Errorf("readClaims(%q) took it", bad)
		}
	}
}

// TestTokenFromHub: the agent takes its token from the Secret the provider
// mints it into (here the test mints, as the provider would), first with a
// bootstrap token, then, once two thirds of its life have passed, with
// itself: the bootstrap token is gone by then. Neither identity may mint a
// token itself.
func TestTokenFromHub(t *testing.T) {
	ctx := context.Background()
	env, err := testenv.Start(testenv.WithCRDs(filepath.Join(testenv.RepoRoot(), "package", "crds",
		"network.tencentcloud.m.crossplane.io_workloadclusters.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	const ns, name = "cluster-a", "a"
	// What the WorkloadCluster controller creates, made here by hand.
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&v1alpha1.WorkloadCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: v1alpha1.WorkloadClusterSpec{PodCIDRs: []string{"10.244.0.0/16"}, NodeCIDRs: []string{"10.0.0.0/24"}}},
	}
	for sa, rules := range map[string][]rbacv1.PolicyRule{
		v1alpha1.AgentServiceAccount(name):     workloadcluster.AgentRules(name),
		v1alpha1.BootstrapServiceAccount(name): workloadcluster.BootstrapRules(name),
	} {
		objs = append(objs,
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}, Rules: rules},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa}}},
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: sa}})
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The provider's part: a token of the agent in the Secret.
	hand := func(secs int64) string {
		t.Helper()
		tok, err := createToken(ctx, env.Config, ns, v1alpha1.AgentServiceAccount(name), secs)
		if err != nil {
			t.Fatal(err)
		}
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: v1alpha1.AgentTokenSecret(name)}}
		if _, err := controllerutil.CreateOrUpdate(ctx, env.Client, sec, func() error {
			sec.Data = map[string][]byte{v1alpha1.AgentTokenKey: []byte(tok)}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return tok
	}
	var boot string
	if err := testenv.Eventually(ctx, time.Minute, func() error {
		var err error
		boot, err = createToken(ctx, env.Config, ns, v1alpha1.BootstrapServiceAccount(name), 3600)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bootFile := filepath.Join(dir, "bootstrap")
	if err := os.WriteFile(bootFile, []byte(boot), 0o600); err != nil {
		t.Fatal(err)
	}
	// The clock is 50 minutes ahead until the renewal: a token of an hour
	// is then past two thirds of its life.
	var ahead atomic.Bool
	tok := &tokens{
		hub:       &rest.Config{Host: env.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}},
		namespace: ns, cluster: name, file: filepath.Join(dir, "token"), bootstrap: bootFile, log: logr.Discard(),
		now: func() time.Time {
			if ahead.Load() {
				return time.Now().Add(50 * time.Minute)
			}
			return time.Now()
		},
	}
	// Registration before the provider has minted: a clear error.
	if err := tok.ensure(ctx); err == nil || !strings.Contains(err.Error(), "cannot get the agent's token (Secret cluster-a/a-agent-token)") {
		t.Fatalf("registration without a Secret: %v", err)
	}
	first := hand(3600)
	if err := tok.ensure(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(tok.file); string(got) != first {
		t.Fatal("the token file does not hold the token of the Secret")
	}
	// The bootstrap token cannot be what renews it.
	if err := os.Remove(bootFile); err != nil {
		t.Fatal(err)
	}
	own := rest.CopyConfig(tok.hub)
	own.BearerTokenFile = tok.file
	// Nothing newer yet: the renewal says so and keeps the token.
	if err := tok.renew(ctx); err == nil || !strings.Contains(err.Error(), "holds no newer token yet") {
		t.Fatalf("renewal with no newer token: %v", err)
	}
	// Neither identity mints tokens: the lifetime is the provider's.
	for who, cfg := range map[string]*rest.Config{"agent": own, "bootstrap": {Host: own.Host, TLSClientConfig: own.TLSClientConfig, BearerToken: boot}} {
		if _, err := createToken(ctx, cfg, ns, v1alpha1.AgentServiceAccount(name), 86400); !kerrors.IsForbidden(err) {
			t.Errorf("the %s token minted an agent token for a day (%v), want Forbidden", who, err)
		}
	}

	second := hand(7200)
	ahead.Store(true)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- tok.Start(ctx) }()
	err = testenv.Eventually(ctx, 30*time.Second, func() error {
		got, err := os.ReadFile(tok.file)
		if err != nil {
			return err
		}
		if string(got) != second {
			return errNotRenewed
		}
		return nil
	})
	ahead.Store(false)
	cancel()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	who, err := whoAmI(context.Background(), own)
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + ns + ":" + v1alpha1.AgentServiceAccount(name); who != want {
		t.Errorf("the renewed token is %s, want %s", who, want)
	}
}

var errNotRenewed = errors.New("the token file does not hold the provider's newer token")

// createToken is what kubectl create token --duration does.
func createToken(ctx context.Context, cfg *rest.Config, ns, sa string, secs int64) (string, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}
