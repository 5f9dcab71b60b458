package gameserverset

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

func TestPoolSpec(t *testing.T) {
	cases := []struct {
		name      string
		conf      map[string]string
		start     int64
		end       *int64
		quota     *int64
		ids       []string
		protocols string
		err       string
	}{
		{name: "tke-extend's defaults", conf: map[string]string{"ClbIds": "lb-1, lb-2", "PortProtocols": "7777/UDP,8080"},
			start: 30000, ids: []string{"lb-1", "lb-2"}, protocols: "TCP,UDP"},
		{name: "MinPort, ListenerQuota, TCPUDP", conf: map[string]string{"ClbIds": "lb-1", "MinPort": "31000", "ListenerQuota": "100", "PortProtocols": "7777/TCPUDP"},
			start: 31000, quota: ptr.To[int64](100), ids: []string{"lb-1"}, protocols: "TCP,UDP"},
		{name: "MaxPort", conf: map[string]string{"ClbIds": "lb-1", "MinPort": "31000", "MaxPort": "31099", "PortProtocols": "7777/UDP"},
			start: 31000, end: ptr.To[int64](31099), ids: []string{"lb-1"}, protocols: "UDP"},
		{name: "no ClbIds", conf: map[string]string{"PortProtocols": "7777/UDP"}, err: "ClbIds is missing or empty"},
		{name: "bad MinPort", conf: map[string]string{"ClbIds": "lb-1", "MinPort": "x", "PortProtocols": "7777/UDP"}, err: `MinPort "x" is not a number from 1 to 65535`},
		{name: "MaxPort below MinPort", conf: map[string]string{"ClbIds": "lb-1", "MinPort": "31000", "MaxPort": "30000", "PortProtocols": "7777/UDP"}, err: "MaxPort 30000 must be above MinPort 31000"},
		{name: "bad protocol", conf: map[string]string{"ClbIds": "lb-1", "PortProtocols": "7777/SCTP"}, err: `protocol "SCTP"`},
		{name: "no port", conf: map[string]string{"ClbIds": "lb-1"}, err: "PortProtocols \"\" names no port"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, protocols, err := poolSpec(c.conf)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.StartPort != c.start || ptr.Deref(s.EndPort, 0) != ptr.Deref(c.end, 0) || ptr.Deref(s.ListenerQuota, 0) != ptr.Deref(c.quota, 0) ||
				!slices.Equal(s.ExsistedLoadBalancerIDs, c.ids) || protocols != c.protocols {
				t.Errorf("got %+v %q", s, protocols)
			}
		})
	}
}

func TestNetworkConf(t *testing.T) {
	gss := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"network": map[string]any{
		"networkType": "TencentCloud-CLB", "networkConf": []any{map[string]any{"name": "ClbIds", "value": "lb-1"}},
	}}}}
	if conf, ok := networkConf(gss); !ok || conf["ClbIds"] != "lb-1" {
		t.Errorf("conf %v %v", conf, ok)
	}
	_ = unstructured.SetNestedField(gss.Object, "AlibabaCloud-NLB", "spec", "network", "networkType")
	if _, ok := networkConf(gss); ok {
		t.Error("another network type read as TencentCloud-CLB")
	}
}
