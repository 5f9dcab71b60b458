package httpauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http/httptest"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestNode(t *testing.T) {
	for name, tc := range map[string]struct {
		c    Caller
		want string
	}{
		"kubelet":                 {Caller{Name: "system:node:n1", Groups: []string{"system:authenticated", NodesGroup}}, "n1"},
		"node name, not in group": {Caller{Name: "system:node:n1", Groups: []string{"system:authenticated"}}, ""},
		"in group, not a node":    {Caller{Name: "alice", Groups: []string{NodesGroup}}, ""},
		"empty node name":         {Caller{Name: "system:node:", Groups: []string{NodesGroup}}, ""},
		"pod-bound token":         {Caller{Name: "system:serviceaccount:kube-system:cni", Extra: map[string][]string{ExtraNodeName: {"n2"}}}, "n2"},
		"unbound token":           {Caller{Name: "system:serviceaccount:kube-system:cni"}, ""},
		"two node names":          {Caller{Name: "x", Extra: map[string][]string{ExtraNodeName: {"n1", "n2"}}}, ""},
	} {
		if got := tc.c.Node(); got != tc.want {
			t.Errorf("%s: Node() = %q, want %q", name, got, tc.want)
		}
	}
}

// TestCertificateFirst: a verified client certificate is the caller (CN,
// O) and no token is reviewed; an unverified one counts for nothing.
func TestCertificateFirst(t *testing.T) {
	reviews := 0
	a := New(fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		reviews++
		obj.(*authenticationv1.TokenReview).Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "by-token"}}
		return nil
	}}).Build(), nil)
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{NodesGroup}}}
	r := httptest.NewRequest("POST", "/", nil)
	r.Header.Set("Authorization", "Bearer t")
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}, VerifiedChains: [][]*x509.Certificate{{cert}}}
	c, err := a.Authenticate(context.Background(), r)
	if err != nil || c.Name != "system:node:n1" || c.Node() != "n1" || reviews != 0 {
		t.Errorf("verified certificate: %+v %v, %d reviews", c, err, reviews)
	}
	r.TLS.VerifiedChains = nil
	if c, err := a.Authenticate(context.Background(), r); err != nil || c.Name != "by-token" || reviews != 1 {
		t.Errorf("unverified certificate and a token: %+v %v, %d reviews", c, err, reviews)
	}
}

// TestOnlyAllowedCachedForTTL: an allowed review and an authenticated
// token are reused until TTL has passed; a denial or a refused token is
// asked again every time.
func TestOnlyAllowedCachedForTTL(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sars, trs := 0, 0
	a := New(fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		switch o := obj.(type) {
		case *authorizationv1.SubjectAccessReview:
			sars++
			o.Status.Allowed = o.Spec.ResourceAttributes.Verb == "create"
			if !o.Status.Allowed {
				o.Status.Reason = "no rule"
			}
		case *authenticationv1.TokenReview:
			trs++
			o.Status.Authenticated = o.Spec.Token == "good"
			o.Status.User.Username = "u"
			if !o.Status.Authenticated {
				o.Status.Error = "invalid bearer token"
			}
		}
		return nil
	}}).Build(), nil)
	a.now = func() time.Time { return now }
	ctx := context.Background()
	c := &Caller{Name: "u"}
	for range 2 {
		if ok, _, err := a.Authorize(ctx, c, Attributes{Verb: "create", Name: "p"}); !ok || err != nil {
			t.Fatalf("create: %v %v", ok, err)
		}
		if ok, reason, err := a.Authorize(ctx, c, Attributes{Verb: "delete", Name: "p"}); ok || reason != "no rule" || err != nil {
			t.Fatalf("delete: %v %q %v", ok, reason, err)
		}
	}
	if sars != 3 {
		t.Errorf("%d reviews, want 3 (create once, delete twice)", sars)
	}
	now = now.Add(TTL)
	if _, _, _ = a.Authorize(ctx, c, Attributes{Verb: "create", Name: "p"}); sars != 4 {
		t.Errorf("after TTL: %d reviews, want 4", sars)
	}
	for _, token := range []string{"good", "good", "bad", "bad"} {
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		_, err := a.Authenticate(ctx, r)
		if (err == nil) != (token == "good") {
			t.Errorf("token %s: %v", token, err)
		}
	}
	if trs != 3 {
		t.Errorf("%d token reviews, want 3 (good once, bad twice)", trs)
	}
}
