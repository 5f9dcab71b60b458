package gameserver

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/podannotation"
)

func TestOwns(t *testing.T) {
	gs := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "games", Name: "gs-1", UID: "u-1"}}
	ref := func(apiVersion, kind, name, uid string, controller bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(controller)}}
	}
	pod := func(name, label string, refs []metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "games", Name: name, Labels: map[string]string{Label: label}, OwnerReferences: refs}}
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"AsAgonesMakesIt":       {pod("gs-1", "gs-1", ref("agones.dev/v1", "GameServer", "gs-1", "u-1", true)), true},
		"LabelOnly":             {pod("gs-1", "gs-1", nil), false},
		"AnotherName":           {pod("intruder", "gs-1", ref("agones.dev/v1", "GameServer", "gs-1", "u-1", true)), false},
		"AnotherLabel":          {pod("gs-1", "gs-2", ref("agones.dev/v1", "GameServer", "gs-1", "u-1", true)), false},
		"AnotherUID":            {pod("gs-1", "gs-1", ref("agones.dev/v1", "GameServer", "gs-1", "u-2", true)), false},
		"NotController":         {pod("gs-1", "gs-1", ref("agones.dev/v1", "GameServer", "gs-1", "u-1", false)), false},
		"AnotherGroup":          {pod("gs-1", "gs-1", ref("game.kruise.io/v1alpha1", "GameServer", "gs-1", "u-1", true)), false},
		"AnotherKind":           {pod("gs-1", "gs-1", ref("agones.dev/v1", "Fleet", "gs-1", "u-1", true)), false},
		"AnotherOwnerName":      {pod("gs-1", "gs-1", ref("agones.dev/v1", "GameServer", "gs-2", "u-1", true)), false},
		"AnotherAgonesVersion":  {pod("gs-1", "gs-1", ref("agones.dev/v2", "GameServer", "gs-1", "u-1", true)), true},
		"MalformedAPIVersion":   {pod("gs-1", "gs-1", ref("agones.dev/v1/x", "GameServer", "gs-1", "u-1", true)), false},
		"NoLabelButOwnedByName": {pod("gs-1", "", ref("agones.dev/v1", "GameServer", "gs-1", "u-1", true)), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Owns(gs, tc.pod); got != tc.want {
				t.Errorf("Owns: %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCarried(t *testing.T) {
	in := map[string]string{
		podannotation.AnnotationPorts:            "7654/UDP pool", // the request: not ours to copy
		podannotation.AnnotationAddresses:        `[{"address":"1.1.1.1:31000"}]`,
		podannotation.AnnotationStatus:           "Ready",
		podannotation.TKEAnnotationMappingResult: `[]`,
		podannotation.AnnotationNamedAddresses:   "game.example.com/address,,game.example.com/gone",
		"game.example.com/address":               "1.1.1.1:31000",
		"team.example.com/owner":                 "blue",
	}
	want := map[string]string{
		podannotation.AnnotationAddresses:        `[{"address":"1.1.1.1:31000"}]`,
		podannotation.AnnotationStatus:           "Ready",
		podannotation.TKEAnnotationMappingResult: `[]`,
		podannotation.AnnotationNamedAddresses:   "game.example.com/address,,game.example.com/gone",
		"game.example.com/address":               "1.1.1.1:31000",
	}
	if got := Carried(in); !maps.Equal(got, want) {
		t.Errorf("Carried:\n got %v\nwant %v", got, want)
	}
	if got := Carried(nil); len(got) != 0 {
		t.Errorf("Carried(nil): %v", got)
	}
}

func TestChanged(t *testing.T) {
	base := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "games", Name: "gs-1",
			Labels:      map[string]string{Label: "gs-1", "app": "a"},
			Annotations: map[string]string{podannotation.AnnotationStatus: "NotReady", "other": "x"}}}
	}
	cases := map[string]struct {
		edit func(*corev1.Pod)
		want bool
	}{
		"Nothing":         {func(*corev1.Pod) {}, false},
		"OtherLabel":      {func(p *corev1.Pod) { p.Labels["app"] = "b" }, false},
		"OtherAnnotation": {func(p *corev1.Pod) { p.Annotations["other"] = "y" }, false},
		"Told":            {func(p *corev1.Pod) { p.Annotations[podannotation.AnnotationStatus] = "Ready" }, true},
		"GameServer":      {func(p *corev1.Pod) { p.Labels[Label] = "gs-2" }, true},
		"Owner": {func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "agones.dev/v1", Kind: "GameServer", Name: "gs-1", UID: "u", Controller: ptr.To(true)}}
		}, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := base()
			tc.edit(n)
			if got := changed(base(), n); got != tc.want {
				t.Errorf("changed: %v, want %v", got, tc.want)
			}
		})
	}
	// A Pod that never had the label is not ours to follow.
	o, n := base(), base()
	delete(o.Labels, Label)
	delete(n.Labels, Label)
	n.Annotations[podannotation.AnnotationStatus] = "Ready"
	if changed(o, n) {
		t.Error("changed: true for a Pod without the label")
	}
}
