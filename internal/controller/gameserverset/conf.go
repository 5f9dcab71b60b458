package gameserverset

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/tencentcloud-network/provider-tencentcloud-network/apis/tkeextend/v1alpha1"
)

// NetworkType is the networkType of OKG's TencentCloud-CLB plugin.
const NetworkType = "TencentCloud-CLB"

// The network conf keys read, those tke-extend reads (ClbIds, MinPort,
// ListenerQuota) and the plugin's PortProtocols; MaxPort is ours.
const (
	confClbIDs        = "ClbIds"
	confMinPort       = "MinPort"
	confMaxPort       = "MaxPort"
	confListenerQuota = "ListenerQuota"
	confPortProtocols = "PortProtocols"
)

// defaultMinPort is tke-extend's startPort of a GameServerSet's pool.
const defaultMinPort = 30000

// poolName is the CLBPortPool of a GameServerSet, the pool OKG's plugin
// names in the Pods' mapping lines.
func poolName(namespace, name string) string { return namespace + "-" + name }

// networkConf reads spec.network of a GameServerSet: ok is false when it
// is not TencentCloud-CLB.
func networkConf(gss *unstructured.Unstructured) (conf map[string]string, ok bool) {
	t, _, _ := unstructured.NestedString(gss.Object, "spec", "network", "networkType")
	if t != NetworkType {
		return nil, false
	}
	items, _, _ := unstructured.NestedSlice(gss.Object, "spec", "network", "networkConf")
	conf = map[string]string{}
	for _, it := range items {
		kv, _ := it.(map[string]any)
		n, _ := kv["name"].(string)
		v, _ := kv["value"].(string)
		conf[n] = v
	}
	return conf, true
}

// poolSpec is the CLBPortPool spec and protocols annotation a network conf
// asks for; an error names the bad key.
func poolSpec(conf map[string]string) (v1alpha1.CLBPortPoolSpec, string, error) {
	s := v1alpha1.CLBPortPoolSpec{StartPort: defaultMinPort}
	for _, id := range strings.Split(conf[confClbIDs], ",") {
		if id = strings.TrimSpace(id); id != "" {
			s.ExsistedLoadBalancerIDs = append(s.ExsistedLoadBalancerIDs, id)
		}
	}
	if len(s.ExsistedLoadBalancerIDs) == 0 {
		return s, "", fmt.Errorf("%s is missing or empty: name the load balancers of the pool, lb-… separated by commas", confClbIDs)
	}
	num := func(key string, lo, hi int64) (*int64, error) {
		v, ok := conf[key]
		if !ok {
			return nil, nil
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("%s %q is not a number from %d to %d", key, v, lo, hi)
		}
		return &n, nil
	}
	minPort, err := num(confMinPort, 1, 65535)
	if err != nil {
		return s, "", err
	}
	if minPort != nil {
		s.StartPort = *minPort
	}
	if s.EndPort, err = num(confMaxPort, 1, 65535); err != nil {
		return s, "", err
	}
	if s.EndPort != nil && *s.EndPort <= s.StartPort {
		return s, "", fmt.Errorf("%s %d must be above %s %d", confMaxPort, *s.EndPort, confMinPort, s.StartPort)
	}
	if s.ListenerQuota, err = num(confListenerQuota, 1, 65535); err != nil {
		return s, "", err
	}
	if s.EndPort != nil && s.ListenerQuota != nil {
		return s, "", fmt.Errorf("%s and %s cannot both be given", confMaxPort, confListenerQuota)
	}
	protocols, err := listenerProtocols(conf[confPortProtocols])
	return s, protocols, err
}

// listenerProtocols are the listener protocols the ports of PortProtocols
// use ("7777/UDP,8080" → "TCP,UDP"), as OKG's plugin reads them: TCP when
// a port names none.
func listenerProtocols(v string) (string, error) {
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, pp := range strings.Split(v, ",") {
		if strings.TrimSpace(pp) == "" {
			continue
		}
		port, proto, _ := strings.Cut(strings.TrimSpace(pp), "/")
		if _, err := strconv.Atoi(port); err != nil {
			continue // the plugin skips it too
		}
		switch proto {
		case "", "TCP":
			add("TCP")
		case "UDP":
			add("UDP")
		case "TCPUDP":
			add("TCP")
			add("UDP")
		case "TCP_SSL", "QUIC":
			add(proto)
		default:
			return "", fmt.Errorf("%s %q: protocol %q is not TCP, UDP, TCPUDP, TCP_SSL or QUIC", confPortProtocols, v, proto)
		}
	}
	if len(out) == 0 {
		return "", fmt.Errorf("%s %q names no port: OKG's plugin needs port/protocol pairs such as 7777/UDP", confPortProtocols, v)
	}
	slices.Sort(out)
	return strings.Join(out, ","), nil
}
