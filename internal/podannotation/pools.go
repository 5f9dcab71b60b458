package podannotation

import (
	"cmp"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/network/v1alpha1"
)

// NamedPools returns the keys of the pools the Pod's port annotations
// name, in any syntax, read from each line without checking it: the
// pools of a request Parse refuses are known too, so that a pool in a dry
// run of the switch from tke-extend keeps its Pods unwritten whatever
// they ask (docs/migrate-tke-extend.md). Only a guide: what is bound
// comes from Parse.
func NamedPools(pod *corev1.Pod) []string {
	a := pod.GetAnnotations()
	var keys []string
	add := func(name, defaultNS string) {
		ref, nsGiven := parsePoolRef(strings.TrimSpace(name))
		if !nsGiven {
			ref.Namespace = defaultNS
		}
		if ref.Name != "" && ref.Namespace != "" {
			keys = append(keys, v1alpha1.PoolKey(ref.Namespace, ref.Name))
		}
	}
	lines := func(key string, each func(fields []string)) {
		for raw := range strings.FieldsFuncSeq(a[key], func(r rune) bool { return r == ';' || r == '\n' || r == '\r' }) {
			if f := strings.Fields(raw); len(f) > 0 {
				each(f)
			}
		}
	}
	for _, key := range []string{TKEAnnotationPortMapping, TKEAnnotationHostPortMapping} {
		lines(key, func(f []string) { // <port> <PROTO> <pool>[,<pool>…] …
			if len(f) >= 3 {
				for p := range strings.SplitSeq(f[2], ",") {
					add(p, TKEPoolNamespace)
				}
			}
		})
	}
	lines(AnnotationPorts, func(f []string) { // <port>[/<protocol>] <pool>[,<pool>…]
		for p := range strings.SplitSeq(strings.Join(f[1:], ""), ",") {
			add(p, pod.GetNamespace())
		}
	})
	lines(BCSAnnotationPorts, func(f []string) { // <pool>[.<namespace>] [<protocol>] <port>
		name, ns, _ := strings.Cut(f[0], ".")
		add(name, cmp.Or(ns, pod.GetNamespace()))
	})
	return keys
}
