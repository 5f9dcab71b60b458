package tenancy

// The provider's own reach (issue 25, item 5): what its ServiceAccount may
// change on a Pod (examples/provider/pod-writes-policy.yaml, enforced by
// the API server), who may read its metrics (the API server authenticates
// and authorises each scraper), and who may call its webhooks (only the
// API server, by its client certificate, and never over HTTP/2).

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/endpoints"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/randhostport"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv/suite"
	pwebhook "github.com/tencentcloud-network/provider-tencentcloud-network/internal/webhook"
)

// More people of this area.
const (
	// Provider is the provider's ServiceAccount with the RBAC of every
	// feature: what a compromised or mistaken provider could do.
	Provider Who = "provider"
	// Scraper is a monitoring ServiceAccount bound to
	// examples/provider/metrics-reader.yaml.
	Scraper Who = "scraper"
)

// The Pod the provider's writes are tried on, in a namespace of its own so
// that it is part of every comparison from the first (see victimPod).
const (
	victimNamespace = "hardening-victim"
	victimName      = "game"
	ownerAnnotation = "team.example.com/owner"
)

// webhookClientCA is the CA of the client certificate the API server
// presents to webhooks (webhookClients); the provider's webhook accepts
// only it.
var webhookClientCA string

// webhookClients configures the suite's API server with a client
// certificate for the webhooks it calls, as docs/install.md tells admins
// to ("The webhook's callers").
func webhookClients() suite.Option {
	dir, err := os.MkdirTemp("", "tenancy-webhook-clients-")
	if err != nil {
		panic(err)
	}
	opt, p, err := testenv.WebhookClientCert(dir)
	if err != nil {
		panic(err)
	}
	webhookClientCA = filepath.Join(p.ClientDir, "ca.crt")
	return suite.ControlPlane(opt)
}

//nolint:gochecknoinits // each area registers its cases from its file, as the suite asks
func init() {
	compare(victimPod)
	attack(
		Attack{Name: "provider-labels-pod", Who: Provider, What: "the provider's ServiceAccount changes a label of a Pod it serves (its RBAC allows pods patch)",
			Want: "the provider may not change a Pod's labels",
			Try:  providerPatch(false, `{"metadata":{"labels":{"app":"evil"}}}`)},
		Attack{Name: "provider-swaps-image", Who: Provider, What: "the provider's ServiceAccount replaces a Pod's container image",
			Want: "the provider may not change a Pod's spec",
			Try:  providerPatch(false, `{"spec":{"containers":[{"name":"server","image":"evil/server"}]}}`)},
		Attack{Name: "provider-rewrites-annotation", Who: Provider, What: "the provider's ServiceAccount rewrites an annotation of the Pod's owner",
			Want: "may change only the annotations it writes on a Pod, not " + ownerAnnotation,
			Try:  providerPatch(false, `{"metadata":{"annotations":{"`+ownerAnnotation+`":"mallory"}}}`)},
		Attack{Name: "provider-names-owner-annotation", Who: Provider, What: "the provider's ServiceAccount records the owner's annotation as an address annotation it set, and rewrites it",
			Want: "not " + ownerAnnotation,
			Try: providerPatch(false, `{"metadata":{"annotations":{"`+ownerAnnotation+`":"mallory","`+
				podannotation.AnnotationNamedAddresses+`":"`+ownerAnnotation+`"}}}`)},
		Attack{Name: "provider-moves-pod-ip", Who: Provider, What: "the provider's ServiceAccount changes a Pod's IP through pods/status (Services would send its traffic elsewhere)",
			Want: "the provider may change nothing of a Pod's status but its own conditions",
			Try:  providerPatch(true, `{"status":{"podIP":"10.99.0.66","podIPs":[{"ip":"10.99.0.66"},{"$patch":"replace"}]}}`)},
		Attack{Name: "provider-marks-pod-ready", Who: Provider, What: "the provider's ServiceAccount sets a Pod's Ready condition",
			Want: "the provider may set only its own conditions on a Pod",
			Try:  providerPatch(true, `{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`)},
		Attack{Name: "anonymous-scrapes-metrics", Who: Anonymous, What: "read the provider's /metrics without a token",
			Want: "401 Unauthorized",
			Try: func(ctx context.Context, t *testing.T) (string, error) {
				return scrapeRefused(ctx, t, "")
			}},
		Attack{Name: "tenant-scrapes-metrics", Who: TenantA, What: "read the provider's /metrics with the token of a ServiceAccount of her namespace",
			Want: "403 Forbidden",
			Try: func(ctx context.Context, t *testing.T) (string, error) {
				return scrapeRefused(ctx, t, saToken(ctx, t, NamespaceA, "player"))
			}},
		Attack{Name: "tenant-forges-admission-review", Who: TenantA, What: "post an AdmissionReview to the provider's webhook port for a Pod of tenant-b asking for ports at admission",
			Want: "tls: certificate required",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				return forgeReview(ctx, nil)
			}},
		Attack{Name: "tenant-own-client-cert", Who: TenantA, What: "post that AdmissionReview with a client certificate of a CA she made",
			Want: "tls: unknown certificate authority",
			Try: func(ctx context.Context, t *testing.T) (string, error) {
				p, err := testenv.NewPKI(t.TempDir())
				if err != nil {
					return "", err
				}
				cert, err := tls.X509KeyPair(p.ClientCert, p.ClientKey)
				if err != nil {
					return "", err
				}
				return forgeReview(ctx, &cert)
			}},
		Attack{Name: "tenant-http2-to-webhook", Who: TenantA, What: "open an HTTP/2 connection to the webhook port (the rapid-reset stream flood needs one)",
			Want: "tls: no application protocol",
			Try: func(ctx context.Context, _ *testing.T) (string, error) {
				d := &tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}} //nolint:gosec // the caller is checked, not the server
				c, err := d.DialContext(ctx, "tcp", w.Webhook)
				if err != nil {
					return err.Error(), nil
				}
				proto := c.(*tls.Conn).ConnectionState().NegotiatedProtocol
				_ = c.Close()
				return "", errors.Errorf("the webhook port accepted the connection, protocol %q", proto)
			}},
	)
	allow(
		Allowed{Name: "provider-writes-its-annotations", Who: Provider, What: "the provider's ServiceAccount writes its status annotation and address condition on a Pod",
			Try: func(ctx context.Context, _ *testing.T) error {
				body := `{"metadata":{"annotations":{"` + podannotation.AnnotationStatus + `":"Ready"}},"status":{"conditions":[{"type":"` +
					podannotation.ConditionAddressReady + `","status":"True","reason":"Bound"}]}}`
				return patchVictim(ctx, true, body)
			}},
		Allowed{Name: "scraper-reads-metrics", Who: Scraper, What: "a ServiceAccount bound to metrics-reader.yaml reads /metrics over HTTP/1.1",
			Try: func(ctx context.Context, t *testing.T) error {
				if _, err := testenv.Apply(ctx, kube, filepath.Join(testenv.RepoRoot(), "examples", "provider", "metrics-reader.yaml")); err != nil {
					return err
				}
				tok := saToken(ctx, t, "monitoring", "prometheus")
				return testenv.Eventually(ctx, wait, func() error {
					code, body, proto, err := scrape(ctx, t, tok)
					switch {
					case err != nil:
						return err
					case code != http.StatusOK || proto != "HTTP/1.1" || !strings.Contains(body, "controller_runtime_reconcile_total"):
						return errors.Errorf("%d over %s: %.200s", code, proto, body)
					}
					return nil
				})
			}},
		Allowed{Name: "apiserver-calls-webhook", Who: TenantA, What: "a Pod asking for a random hostPort is admitted: the API server reaches the fail-closed webhook with its client certificate",
			Try: func(ctx context.Context, _ *testing.T) error {
				p, err := Pod(ctx, TenantA, NamespaceA, "randhost", "", map[string]string{
					randhostport.AnnotationEnabled: "true", randhostport.AnnotationPorts: "game"})
				if err != nil {
					return err
				}
				if hp := p.Spec.Containers[0].Ports[0].HostPort; hp == 0 {
					return errors.Errorf("no hostPort given at admission: %+v", p.Spec.Containers[0].Ports)
				}
				return nil
			}},
	)
}

var victimOnce sync.Once

// victimPod records the victim Pod for every comparison: labels,
// annotations, spec, IP and conditions. It makes the Pod at the first
// snapshot of the suite, before recording it, so every attack compares it.
func victimPod(ctx context.Context, into map[string]string) error {
	var err error
	victimOnce.Do(func() {
		if err = kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: victimNamespace}}); err != nil {
			return
		}
		var p *corev1.Pod
		if p, err = Pod(ctx, Admin, victimNamespace, victimName, "10.99.0.1", map[string]string{ownerAnnotation: "alice"}); err != nil {
			return
		}
		err = testenv.Eventually(ctx, wait, func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}}
			return kube.Status().Update(ctx, p)
		})
	})
	if err != nil {
		return err
	}
	p := &corev1.Pod{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: victimNamespace, Name: victimName}, p); err != nil {
		return err
	}
	into["Pod "+victimNamespace+"/"+victimName] = jsonOf([]any{p.Labels, p.Annotations, p.Spec.Containers, p.Status.PodIP, p.Status.Conditions})
	return nil
}

// asProvider gives Provider its identity once: the provider's
// ServiceAccount with the RBAC of every feature and the Pod writes policy.
func asProvider(ctx context.Context) error {
	if Config(Provider) != nil {
		return nil
	}
	cfg, err := env.AsProvider(ctx, testenv.Features()...)
	if err != nil {
		return err
	}
	return SetIdentity(Provider, cfg)
}

// patchVictim makes a strategic merge patch of the victim Pod (its status
// if status) as the provider.
func patchVictim(ctx context.Context, status bool, body string) error {
	if err := asProvider(ctx); err != nil {
		return err
	}
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: victimNamespace, Name: victimName}}
	p := client.RawPatch(types.StrategicMergePatchType, []byte(body))
	if status {
		return Client(Provider).Status().Patch(ctx, target, p)
	}
	return Client(Provider).Patch(ctx, target, p)
}

// providerPatch tries patchVictim and returns the API server's refusal.
func providerPatch(status bool, body string) func(ctx context.Context, t *testing.T) (string, error) {
	return func(ctx context.Context, _ *testing.T) (string, error) {
		return APIRefusal("the provider's patch "+body, patchVictim(ctx, status, body))
	}
}

// saToken makes ServiceAccount namespace/name (as the admin) and returns
// a token the API server issued for it.
func saToken(ctx context.Context, t *testing.T, namespace, name string) string {
	t.Helper()
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := kube.Create(ctx, sa); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := kube.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

var (
	metricsOnce sync.Once
	metricsAddr string
	metricsErr  error
)

// metrics serves the metrics endpoint as cmd/provider does by default
// (endpoints.Metrics, secure), with the provider's identity for its
// TokenReviews and SubjectAccessReviews, until the suite ends.
func metrics(ctx context.Context) (string, error) {
	metricsOnce.Do(func() {
		if metricsErr = asProvider(ctx); metricsErr != nil {
			return
		}
		if metricsAddr, metricsErr = testenv.FreeAddr(); metricsErr != nil {
			return
		}
		cfg := Config(Provider)
		var hc *http.Client
		if hc, metricsErr = rest.HTTPClientFor(cfg); metricsErr != nil {
			return
		}
		var srv metricsserver.Server
		if srv, metricsErr = metricsserver.NewServer(endpoints.Metrics(metricsAddr, true), cfg, hc); metricsErr != nil {
			return
		}
		go func() { _ = srv.Start(context.Background()) }()
		metricsErr = testenv.Eventually(ctx, wait, func() error {
			_, _, _, err := get(ctx, "https://"+metricsAddr+"/metrics", "", nil, []string{"http/1.1"})
			return err
		})
	})
	return metricsAddr, metricsErr
}

// scrape reads /metrics with bearer (none if empty), offering HTTP/2.
func scrape(ctx context.Context, t *testing.T, bearer string) (int, string, string, error) {
	t.Helper()
	addr, err := metrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return get(ctx, "https://"+addr+"/metrics", bearer, nil, []string{"h2", "http/1.1"})
}

// scrapeRefused scrapes with bearer and returns the refusal.
func scrapeRefused(ctx context.Context, t *testing.T, bearer string) (string, error) {
	code, body, _, err := scrape(ctx, t, bearer)
	if err != nil {
		return "", err
	}
	if code == http.StatusOK {
		return "", errors.Errorf("the metrics were served: %.100s", body)
	}
	return fmt.Sprintf("%d %s: %s", code, http.StatusText(code), strings.TrimSpace(body)), nil
}

// forgeReview posts an AdmissionReview of a Pod of tenant-b that asks for
// ports at admission to the provider's webhook, with cert as the client
// certificate (none if nil), and returns the refusal.
func forgeReview(ctx context.Context, cert *tls.Certificate) (string, error) {
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"forged","kind":{"group":"","version":"v1","kind":"Pod"},` +
		`"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"` + NamespaceB + `","operation":"CREATE","userInfo":{"username":"tenant-b"},` +
		`"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"held","namespace":"` + NamespaceB + `","annotations":{"` +
		podannotation.AnnotationPorts + `":"7000 ` + PoolB + `","` + podannotation.AnnotationAllocateAtAdmission + `":"true"}},` +
		`"spec":{"containers":[{"name":"server","image":"example/server","ports":[{"containerPort":7000}]}]}}}}`
	code, body, _, err := post(ctx, "https://"+w.Webhook+pwebhook.AdmissionPath, []byte(review), cert)
	if err != nil {
		return err.Error(), nil
	}
	return "", errors.Errorf("the webhook answered %d: %.200s", code, body)
}

// get and post send one request (testenv.HTTPS) and return status, body
// and protocol.
func get(ctx context.Context, url, bearer string, cert *tls.Certificate, protos []string) (int, string, string, error) {
	a, err := testenv.HTTPS(ctx, testenv.HTTPSRequest{URL: url, Bearer: bearer, Cert: cert, Protos: protos})
	return a.Code, a.Body, a.Proto, err
}

func post(ctx context.Context, url string, body []byte, cert *tls.Certificate) (int, string, string, error) {
	a, err := testenv.HTTPS(ctx, testenv.HTTPSRequest{Method: http.MethodPost, URL: url, Body: body, Cert: cert})
	return a.Code, a.Body, a.Proto, err
}
