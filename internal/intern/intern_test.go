package intern

import (
	"strings"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fresh returns a copy of s in memory of its own, as a decoder makes.
func fresh(s string) string { return strings.Clone(s) }

func TestMetaSharesStringsAndKeepsValues(t *testing.T) {
	mk := func() *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Namespace: fresh("game"), Name: fresh("gs-0"),
			Labels:          map[string]string{fresh("app"): fresh("gs")},
			Annotations:     map[string]string{fresh("example.com/ports"): fresh("7777 pool")},
			Finalizers:      []string{fresh("example.com/finalizer")},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: fresh("apps/v1"), Kind: fresh("StatefulSet"), Name: "gs"}}}
	}
	a, b := mk(), mk()
	want := mk()
	tab := New()
	tab.Meta(a)
	tab.Meta(b)
	for _, m := range []*metav1.ObjectMeta{a, b} {
		if m.Namespace != want.Namespace || m.Labels["app"] != "gs" || m.Annotations["example.com/ports"] != "7777 pool" ||
			m.Finalizers[0] != want.Finalizers[0] || m.OwnerReferences[0].Kind != "StatefulSet" {
			t.Fatalf("Meta changed a value: %+v", m)
		}
	}
	same := func(what, x, y string) {
		if unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s is held twice", what)
		}
	}
	same("namespace", a.Namespace, b.Namespace)
	same("finalizer", a.Finalizers[0], b.Finalizers[0])
	same("owner kind", a.OwnerReferences[0].Kind, b.OwnerReferences[0].Kind)
	same("label value", a.Labels["app"], b.Labels["app"])
	for ka := range a.Annotations {
		for kb := range b.Annotations {
			same("annotation key", ka, kb)
		}
	}
	if unsafe.StringData(a.Name) == unsafe.StringData(b.Name) {
		t.Error("names are an object's own: not interned")
	}
}

func TestTableIsBounded(t *testing.T) {
	tab := New()
	for i := range maxStrings + 10 {
		Of(tab, fresh("k"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+string(rune(i))))
	}
	n := len(tab.m)
	if n > maxStrings {
		t.Fatalf("table holds %d strings, bound %d", n, maxStrings)
	}
	if s := fresh("past the bound"); Of(tab, s) != s {
		t.Fatal("a string past the bound must pass through unchanged")
	}
}
