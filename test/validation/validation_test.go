package validation

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/controller/mr"
	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/tooling/testenv"
)

// A kind is one CRD and a valid object of it: every bad case starts from
// this object and changes a few fields.
type kind struct {
	apiVersion string
	cluster    bool
	spec       string // YAML of a valid spec
}

const (
	healthCheck = `{enabled: true, timeoutSeconds: 2, intervalSeconds: 5, healthyThreshold: 3, unhealthyThreshold: 3, checkType: HTTP, checkPort: 8080, httpCheckPath: /healthz, httpCheckMethod: GET, httpCode: 2}`
	lbParams    = `{name: lb, type: OPEN, vpcId: vpc-1, subnetId: subnet-1, vipIsp: BGP, addressIPVersion: IPV4, slaType: clb.c2.medium, projectId: 0, masterZoneId: ap-guangzhou-3, bandwidthPackageId: bwp-1, tags: {team: a}, internetAccessible: {internetChargeType: TRAFFIC_POSTPAID_BY_HOUR, internetMaxBandwidthOut: 10}}`
	portRequest = `{port: 7777, protocol: UDP, pools: [{name: p}], nodePort: 30001, backend: NodePort}`
)

var kinds = map[string]kind{
	"LoadBalancer": {apiVersion: "clb.tencentcloud.m.crossplane.io/v1alpha1", spec: `forProvider: ` + lbParams},
	"Listener": {apiVersion: "clb.tencentcloud.m.crossplane.io/v1alpha1", spec: `forProvider: {region: ap-guangzhou, loadBalancerId: lb-1, protocol: TCP, port: 80, endPort: 90, name: l,
  scheduler: WRR, sessionExpireTime: 0, healthCheck: ` + healthCheck + `}`},
	"Rule": {apiVersion: "clb.tencentcloud.m.crossplane.io/v1alpha1", spec: `forProvider: {region: ap-guangzhou, loadBalancerId: lb-1, listenerId: lbl-1, domain: a.example.com, url: /,
  scheduler: WRR, sessionExpireTime: 30, forwardType: HTTP, healthCheck: ` + healthCheck + `}`},
	"TargetSet": {apiVersion: "clb.tencentcloud.m.crossplane.io/v1alpha1", spec: `forProvider: {region: ap-guangzhou, loadBalancerId: lb-1, listenerId: lbl-1, ruleId: loc-1,
  targets: [{ip: 10.0.0.1, port: 80, weight: 10}, {instanceId: ins-1, port: 80}],
  source: {services: [{name: web, namespace: shop, port: 8080, backend: PodIP, weight: 80, subsets: [{labelSelector: {version: v2}, weight: 20}]}],
    pods: [{name: room-0, port: 7777, backend: HostPort, weight: 10}], includeNotReady: true}}`},
	"PortPool": {apiVersion: "clb.tencentcloud.m.crossplane.io/v1alpha1", spec: `forProvider: {loadBalancerIds: [lb-1], startPort: 30000, endPort: 30099, segmentLength: 10,
  protocols: [TCP, UDP], allocationPolicy: LeastUsed,
  listener: {scheduler: WRR, sessionExpireTime: 30, healthCheck: ` + healthCheck + `},
  autoCreate: {maxLoadBalancers: 2, minFreeSlots: 1, template: ` + lbParams + `}}`},
	"PodAddress": {apiVersion: "network.tencentcloud.m.crossplane.io/v1alpha1", spec: `{ports: [` + portRequest + `],
  strategy: Dynamic, keepDuration: 5m0s, backend: PodIP}`},
	"PodAddressPolicy": {apiVersion: "network.tencentcloud.m.crossplane.io/v1alpha1", spec: `{selector: {matchLabels: {app: a}}, ports: [` + portRequest + `],
  strategy: Ordinal, keepDuration: 1h30m, backend: PodIP}`},
	"NetPool": {apiVersion: "network.tencentcloud.m.crossplane.io/v1alpha1", cluster: true, spec: `{net: 10.9.0.0, mask: 24, gateway: 10.9.0.1,
  hosts: [10.9.1.1], availableIPs: [10.9.0.5, 10.9.0.6]}`},
	"EIPGrant": {apiVersion: "network.tencentcloud.m.crossplane.io/v1alpha1", cluster: true, spec: `{providerConfigRef: {kind: ClusterProviderConfig, name: default},
  namespaces: {names: [team-a], selector: {matchLabels: {eips: "yes"}}}, maxBandwidth: 10, chargeTypes: [TRAFFIC_POSTPAID_BY_HOUR],
  isps: [BGP], releasePolicies: [Never], maxEIPs: 5, maxWarm: 2}`},
	"NetIP":      {apiVersion: "network.tencentcloud.m.crossplane.io/v1alpha1", cluster: true, spec: `{pool: p, mask: 24, gateway: 10.9.0.1}`},
	"NetIPClaim": {apiVersion: "network.tencentcloud.m.crossplane.io/v1alpha1", spec: `{netIPName: 10.9.0.5, expiredDuration: 10m}`},
	"RemotePod": {apiVersion: "network.tencentcloud.m.crossplane.io/v1alpha1", spec: `{cluster: idc-1, podNamespace: game, podName: room-0,
  podUID: 6f1c1a52-0000-4000-8000-000000000001, labels: {app: room}, annotations: {network.tencentcloud.crossplane.io/ports: "7777 p"},
  owner: {kind: StatefulSet, name: room}, containers: [{name: server, ports: [{containerPort: 7777, protocol: TCP}]}],
  readinessGates: [network.tencentcloud.crossplane.io/address-ready], node: {name: n1, instanceId: ins-1, internalIP: 10.0.0.1},
  podIP: 10.1.0.1, podIPs: [10.1.0.1], ready: true}`},
	"CLBPortPool": {apiVersion: "networking.cloud.tencent.com/v1alpha1", cluster: true, spec: `{startPort: 30000, endPort: 30099, segmentLength: 10,
  region: ap-guangzhou, lbPolicy: Uniform, lbBlacklist: [lb-2], exsistedLoadBalancerIDs: [lb-1], listenerPrecreate: {enabled: true, tcp: 10, udp: 10},
  autoCreate: {enabled: true, maxLoadBalancers: 3, parameters: {vipIsp: CTCC, bandwidthPackageId: bwp-1, addressIPVersion: IPv4, loadBalancerPassToTarget: true,
    dynamicVip: false, vpcId: vpc-1, tags: [{tagKey: k, tagValue: v}], projectId: 0, loadBalancerName: test, loadBalancerType: OPEN, masterZoneId: ap-guangzhou-1,
    zoneId: ap-guangzhou-1, slaType: clb.c4.xlarge, lbChargeType: POSTPAID_BY_HOUR,
    internetAccessible: {internetChargeType: TRAFFIC_POSTPAID_BY_HOUR, internetMaxBandwidthOut: 61440, bandwidthpkgSubType: BGP}}}}`},
	// tke-extend's bindings as its Pod controller writes them.
	"CLBPodBinding": {apiVersion: "networking.cloud.tencent.com/v1alpha1", spec: `{disabled: false,
  ports: [{port: 7000, protocol: TCPUDP, pools: [pool-a, pool-b], useSamePortAcrossPools: true}, {port: 443, protocol: TCP_SSL, pools: [pool-a], certSecretName: game-cert}]}`},
	"CLBNodeBinding":  {apiVersion: "networking.cloud.tencent.com/v1alpha1", cluster: true, spec: `{ports: [{port: 30000, protocol: TCPUDP, pools: [pool-a]}]}`},
	"WorkloadCluster": {apiVersion: "network.tencentcloud.m.crossplane.io/v1alpha1", spec: `{podCIDRs: [10.244.0.0/16], nodeCIDRs: [10.0.0.0/16], disconnectGracePeriod: 15m}`},
	"Address": {apiVersion: "vpc.tencentcloud.m.crossplane.io/v1alpha1", spec: `forProvider: {name: eip, isp: BGP, internetChargeType: TRAFFIC_POSTPAID_BY_HOUR,
  bandwidth: 10, tags: {team: a}, association: {networkInterfaceId: eni-1, privateIpAddress: 10.0.0.1}}`},
	"ProviderConfig": {apiVersion: "tencentcloud.m.crossplane.io/v1alpha1", spec: `{region: ap-guangzhou,
  credentials: {source: Secret, secretRef: {name: creds}}, endpoint: {host: "127.0.0.1:9443", scheme: http}}`},
	"ClusterProviderConfig": {apiVersion: "tencentcloud.crossplane.io/v1alpha1", cluster: true, spec: `{region: ap-guangzhou,
  credentials: {source: Secret, secretRef: {name: creds, namespace: crossplane-system}}, endpoint: {host: "[::1]:9443", scheme: http}}`},
}

// del as an edit's value removes the field.
const del = "<delete>"

// An edit sets the field at a dotted path (list items by index) to a value
// given as YAML.
type edit struct{ path, yaml string }

// A bad case is a kind's valid object with edits, refused by the
// apiserver: on create, or, with update, when an existing valid object is
// changed. check names the schema constraint it tests (minimum, maximum,
// enum, minLength, maxLength, minItems, maxItems or rule); want is a part
// of the message, for a rule its whole message.
type bad struct {
	kind   string
	update bool
	edits  []edit
	check  string
	want   string
}

func (b bad) String() string {
	op := "create"
	if b.update {
		op = "update"
	}
	var es []string
	for _, e := range b.edits {
		es = append(es, e.path+"="+e.yaml)
	}
	return fmt.Sprintf("%s %s %s", op, b.kind, strings.Join(es, ","))
}

// key is what the case covers, as coverage() spells the constraints of
// the CRDs.
func (b bad) key() string {
	if b.check == "rule" {
		return b.kind + " rule: " + b.want
	}
	return b.kind + " " + leaf(b.edits[len(b.edits)-1].path) + " " + b.check
}

// leaf is the last field name of a dotted path, skipping list indexes.
func leaf(path string) string {
	parts := strings.Split(path, ".")
	for i := len(parts) - 1; i >= 0; i-- {
		if _, err := strconv.Atoi(parts[i]); err != nil {
			return parts[i]
		}
	}
	return ""
}

// Helpers for the builtin OpenAPI checks, whose messages the apiserver
// words; each names the limit.
func minimum(k, path string, limit int) bad {
	return bad{kind: k, edits: []edit{{path, strconv.Itoa(limit - 1)}}, check: "minimum", want: fmt.Sprintf("should be greater than or equal to %d", limit)}
}

func maximum(k, path string, limit int) bad {
	return bad{kind: k, edits: []edit{{path, strconv.Itoa(limit + 1)}}, check: "maximum", want: fmt.Sprintf("should be less than or equal to %d", limit)}
}

func rangeOf(k, path string, lo, hi int) []bad {
	return []bad{minimum(k, path, lo), maximum(k, path, hi)}
}

// enum's values are the allowed ones as the apiserver lists them.
func enum(k, path, value, values string) bad {
	return bad{kind: k, edits: []edit{{path, value}}, check: "enum", want: `supported values: ` + values}
}

func minLength(k, path string) bad {
	return bad{kind: k, edits: []edit{{path, `""`}}, check: "minLength", want: "should be at least 1 chars long"}
}

func maxLength(k, path string, limit int) bad {
	return bad{kind: k, edits: []edit{{path, strings.Repeat("a", limit+1)}}, check: "maxLength", want: fmt.Sprintf("may not be more than %d bytes", limit)}
}

func rule(k string, msg string, edits ...edit) bad {
	return bad{kind: k, edits: edits, check: "rule", want: msg}
}

// reservedTags is the rule on every tags field: the provider's own keys,
// in the words the controllers refuse them with too.
const reservedTags = mr.ReservedTagsRule

// tagCases refuse a tags map at path holding a key of the provider's, and
// more tags than leave room for the provider's owner tags.
func tagCases(k, path string) []bad {
	many := make([]string, 17)
	for i := range many {
		many[i] = fmt.Sprintf("k%d: v", i)
	}
	return []bad{
		rule(k, reservedTags, edit{path, "{crossplane-uid: x}"}),
		rule(k, reservedTags, edit{path, "{team: a, network.tencentcloud.m.crossplane.io/owner: x}"}),
		{kind: k, edits: []edit{{path, "{" + strings.Join(many, ", ") + "}"}}, check: "maxProperties", want: "must have at most 16 items"},
	}
}

func immutable(k, msg string, edits ...edit) bad {
	return bad{kind: k, update: true, edits: edits, check: "rule", want: msg}
}

func healthCheckCases(k, p string) []bad {
	var bs []bad
	bs = append(bs, rangeOf(k, p+".timeoutSeconds", 2, 60)...)
	bs = append(bs, rangeOf(k, p+".intervalSeconds", 2, 300)...)
	bs = append(bs, rangeOf(k, p+".healthyThreshold", 2, 10)...)
	bs = append(bs, rangeOf(k, p+".unhealthyThreshold", 2, 10)...)
	bs = append(bs, rangeOf(k, p+".checkPort", 1, 65535)...)
	bs = append(bs, rangeOf(k, p+".httpCode", 1, 31)...)
	bs = append(bs, enum(k, p+".checkType", "UDP", `"TCP", "HTTP", "HTTPS", "GRPC", "PING", "CUSTOM"`), enum(k, p+".httpCheckMethod", "POST", `"HEAD", "GET"`))
	return bs
}

func certificateCases(k, p string) []bad {
	return []bad{
		enum(k, p+".sslMode", "BOTH", `"UNIDIRECTIONAL", "MUTUAL"`),
		minLength(k, p+".certId"),
		rule(k, "sslMode MUTUAL needs certCaId, the client CA certificate", edit{p, `{certId: c, sslMode: MUTUAL}`}),
	}
}

// lbCases are the checks of LoadBalancerParameters at p, a LoadBalancer's
// forProvider or a PortPool's autoCreate template.
func lbCases(k, p string) []bad {
	bs := []bad{
		maxLength(k, p+".name", 60),
		enum(k, p+".type", "PUBLIC", `"OPEN", "INTERNAL"`),
		enum(k, p+".vipIsp", "CTT", `"BGP", "CMCC", "CUCC", "CTCC"`),
		enum(k, p+".addressIPVersion", "IPV5", `"IPV4", "IPV6", "IPv6FullChain"`),
		enum(k, p+".internetAccessible.internetChargeType", "FREE", `"TRAFFIC_POSTPAID_BY_HOUR", "BANDWIDTH_POSTPAID_BY_HOUR", "BANDWIDTH_PACKAGE"`),
		rule(k, "an INTERNAL load balancer needs subnetId", edit{p + ".type", "INTERNAL"}, edit{p + ".vipIsp", del}, edit{p + ".subnetId", del}),
		rule(k, "vipIsp applies to OPEN load balancers only", edit{p + ".type", "INTERNAL"}),
		immutable(k, "type is immutable; create a new LoadBalancer", edit{p + ".type", "INTERNAL"}, edit{p + ".vipIsp", del}),
		immutable(k, "vpcId is immutable", edit{p + ".vpcId", "vpc-2"}),
		immutable(k, "subnetId is immutable", edit{p + ".subnetId", "subnet-2"}),
		immutable(k, "vipIsp is immutable", edit{p + ".vipIsp", "CMCC"}),
		immutable(k, "addressIPVersion is immutable", edit{p + ".addressIPVersion", "IPV6"}),
		immutable(k, "slaType is immutable", edit{p + ".slaType", "clb.c3.small"}),
		immutable(k, "projectId is immutable", edit{p + ".projectId", "7"}),
		immutable(k, "masterZoneId is immutable", edit{p + ".masterZoneId", "ap-guangzhou-4"}),
		immutable(k, "bandwidthPackageId is immutable", edit{p + ".bandwidthPackageId", "bwp-2"}),
		immutable(k, "tags are set at creation and immutable", edit{p + ".tags", "{team: b}"}),
	}
	bs = append(bs, tagCases(k, p+".tags")...)
	return append(bs, rangeOf(k, p+".internetAccessible.internetMaxBandwidthOut", 1, 65535)...)
}

func portRequestCases(k string) []bad {
	p := "spec.ports.0"
	bs := []bad{
		rule(k, eitherPortsOrEIP, edit{"spec.ports", "[]"}),
		rule(k, eitherPortsOrEIP, edit{"spec.eip", "{isp: BGP}"}),
		enum(k, p+".protocol", "SCTP", `"TCP", "UDP", "TCP_UDP", "TCP_SSL", "QUIC"`),
		{kind: k, edits: []edit{{p + ".pools", "[]"}}, check: "minItems", want: "should have at least 1 items"},
		minLength(k, p+".pools.0.name"),
		maxLength(k, p+".certSecret", 253),
		enum(k, p+".backend", "ENI", `"PodIP", "HostPort", "NodePort"`),
		enum(k, "spec.strategy", "Sticky", `"Dynamic", "Ordinal"`),
		enum(k, "spec.backend", "Node", `"PodIP", "HostPort", "NodePort"`),
		rule(k, "keepDuration is a non-negative duration such as 30s, 5m or 2h45m (units ns, us, ms, s, m, h)", edit{"spec.keepDuration", "forever"}),
		rule(k, "keepDuration is a non-negative duration such as 30s, 5m or 2h45m (units ns, us, ms, s, m, h)", edit{"spec.keepDuration", "-5m"}),
		rule(k, "keepDuration is a non-negative duration such as 30s, 5m or 2h45m (units ns, us, ms, s, m, h)", edit{"spec.keepDuration", "5 minutes"}),
	}
	bs = append(bs, rangeOf(k, p+".nodePort", 1, 65535)...)
	return append(bs, eipCases(k)...)
}

const eitherPortsOrEIP = "ask for ports or for an eip, exactly one of them"

// eipCases start from the kind's valid object turned into an EIP request.
func eipCases(k string) []bad {
	asEIP := []edit{{"spec.ports", del}, {"spec.eip", "{isp: BGP, bandwidth: 10, internetChargeType: TRAFFIC_POSTPAID_BY_HOUR, releasePolicy: Never, fallbackPool: {name: p}}"}}
	with := func(b bad) bad {
		b.edits = append(append([]edit{}, asEIP...), b.edits...)
		return b
	}
	bs := []bad{
		with(enum(k, "spec.eip.isp", "CMNET", `"BGP", "CMCC", "CTCC", "CUCC"`)),
		with(enum(k, "spec.eip.internetChargeType", "PREPAID", `"TRAFFIC_POSTPAID_BY_HOUR", "BANDWIDTH_POSTPAID_BY_HOUR", "BANDWIDTH_PACKAGE"`)),
		with(enum(k, "spec.eip.releasePolicy", "Always", `"AfterKeepDuration", "Never"`)),
		with(minLength(k, "spec.eip.fallbackPool.name")),
		with(minimum(k, "spec.eip.bandwidth", 1)),
		with(maximum(k, "spec.eip.bandwidth", 100000)),
		with(maxLength(k, "spec.eip.grant", 253)),
		rule(k, eitherPortsOrEIP, edit{"spec.ports", del}),
	}
	if k == "PodAddressPolicy" {
		bs = append(bs, with(minimum(k, "spec.eipWarm", 0)), with(maximum(k, "spec.eipWarm", 100)),
			rule(k, "eipWarm needs eip", edit{"spec.eipWarm", "3"}))
	}
	return bs
}

func eipGrantCases() []bad {
	const k = "EIPGrant"
	bs := []bad{
		rule(k, "kind is ClusterProviderConfig or ProviderConfig", edit{"spec.providerConfigRef.kind", "Secret"}),
		enum(k, "spec.chargeTypes.0", "FREE", `"TRAFFIC_POSTPAID_BY_HOUR", "BANDWIDTH_POSTPAID_BY_HOUR", "BANDWIDTH_PACKAGE"`),
		enum(k, "spec.isps.0", "CMNET", `"BGP", "CMCC", "CTCC", "CUCC"`),
		enum(k, "spec.releasePolicies.0", "Always", `"AfterKeepDuration", "Never"`),
		minimum(k, "spec.maxEIPs", 0),
		minimum(k, "spec.maxWarm", 0),
		rule(k, "maxWarm cannot exceed maxEIPs", edit{"spec.maxWarm", "6"}),
	}
	return append(bs, rangeOf(k, "spec.maxBandwidth", 1, 100000)...)
}

func providerConfigCases(k string) []bad {
	const region = "region is a Tencent Cloud region such as ap-guangzhou"
	const host = "host is host[:port] without a scheme or path, e.g. clb.tencentcloudapi.com or 127.0.0.1:9443"
	return []bad{
		rule(k, region, edit{"spec.region", "Guangzhou"}),
		rule(k, region, edit{"spec.region", `""`}),
		maxLength(k, "spec.region", 64),
		enum(k, "spec.credentials.source", "Environment", `"Secret"`),
		minLength(k, "spec.credentials.secretRef.name"),
		rule(k, host, edit{"spec.endpoint.host", "https://clb.tencentcloudapi.com/"}),
		rule(k, host, edit{"spec.endpoint.host", `""`}),
		maxLength(k, "spec.endpoint.host", 253),
		enum(k, "spec.endpoint.scheme", "ftp", `"https", "http"`),
	}
}

func cases() []bad {
	var bs []bad
	add := func(b ...bad) { bs = append(bs, b...) }

	add(lbCases("LoadBalancer", "spec.forProvider")...)
	add(eipGrantCases()...)

	const lis = "spec.forProvider"
	add(
		enum("Listener", lis+".protocol", "SCTP", `"TCP", "UDP", "HTTP", "HTTPS", "TCP_SSL", "QUIC"`),
		rule("Listener", "endPort must be greater than port", edit{lis + ".endPort", "80"}),
		rule("Listener", "a port range (endPort) is only for TCP and UDP listeners", edit{lis + ".protocol", "TCP_SSL"}, edit{lis + ".certificate", "{certId: c}"}),
		rule("Listener", "HTTPS, TCP_SSL and QUIC listeners need a certificate", edit{lis + ".protocol", "QUIC"}, edit{lis + ".endPort", del}),
		rule("Listener", "certificate applies to HTTPS, TCP_SSL and QUIC listeners only", edit{lis + ".certificate", "{certId: c}"}),
		rule("Listener", "HTTP and HTTPS listeners take scheduler, sessionExpireTime and healthCheck on their Rules", edit{lis + ".protocol", "HTTP"}, edit{lis + ".endPort", del}),
		immutable("Listener", "loadBalancerId is immutable; create a new Listener", edit{lis + ".loadBalancerId", "lb-2"}),
		immutable("Listener", "protocol is immutable; create a new Listener", edit{lis + ".protocol", "UDP"}),
		immutable("Listener", "port is immutable; create a new Listener", edit{lis + ".port", "81"}),
		immutable("Listener", "endPort is immutable; create a new Listener", edit{lis + ".endPort", "91"}),
		maxLength("Listener", lis+".name", 255),
		enum("Listener", lis+".scheduler", "RR", `"WRR", "LEAST_CONN", "IP_HASH"`),
		rule("Listener", "sessionExpireTime is 0 (off) or 30-3600 seconds", edit{lis + ".sessionExpireTime", "29"}),
	)
	add(rangeOf("Listener", lis+".port", 1, 65535)...)
	add(rangeOf("Listener", lis+".endPort", 2, 65535)...)
	add(rangeOf("Listener", lis+".sessionExpireTime", 0, 3600)...)
	add(healthCheckCases("Listener", lis+".healthCheck")...)
	// A QUIC listener with the certificate under test.
	for _, c := range certificateCases("Listener", lis+".certificate") {
		c.edits = append([]edit{{lis + ".protocol", "QUIC"}, {lis + ".endPort", del}, {lis + ".certificate", "{certId: c}"}}, c.edits...)
		add(c)
	}

	const ad = "spec.forProvider"
	add(
		maxLength("Address", ad+".name", 128),
		enum("Address", ad+".isp", "ACME", `"BGP", "CMCC", "CTCC", "CUCC"`),
		enum("Address", ad+".internetChargeType", "FREE", `"TRAFFIC_POSTPAID_BY_HOUR", "BANDWIDTH_POSTPAID_BY_HOUR", "BANDWIDTH_PACKAGE"`),
		rule("Address", "bandwidth must be at least 1 Mbps", edit{ad + ".bandwidth", "0"}),
		immutable("Address", "isp is immutable", edit{ad + ".isp", "CMCC"}),
		immutable("Address", "internetChargeType is immutable", edit{ad + ".internetChargeType", "BANDWIDTH_PACKAGE"}),
		immutable("Address", "bandwidth is immutable", edit{ad + ".bandwidth", "20"}),
		immutable("Address", "tags are set at allocation and immutable", edit{ad + ".tags", "{team: b}"}),
		rule("Address", "set either instanceId, or privateIpAddress (and optionally networkInterfaceId), not both", edit{ad + ".association.instanceId", "ins-1"}),
		rule("Address", "set instanceId or privateIpAddress", edit{ad + ".association", "{networkInterfaceId: eni-1}"}),
		rule("Address", "networkInterfaceId is an ENI id, eni-…", edit{ad + ".association.networkInterfaceId", "nic-1"}),
		rule("Address", "instanceId is a CVM instance id, ins-…", edit{ad + ".association", "{instanceId: vm-1}"}),
		rule("Address", "privateIpAddress is an IPv4 address", edit{ad + ".association.privateIpAddress", "10.0.0"}),
	)
	add(tagCases("Address", ad+".tags")...)

	const rl = "spec.forProvider"
	add(
		immutable("Rule", "loadBalancerId is immutable; create a new Rule", edit{rl + ".loadBalancerId", "lb-2"}),
		immutable("Rule", "listenerId is immutable; create a new Rule", edit{rl + ".listenerId", "lbl-2"}),
		immutable("Rule", "domain is immutable; create a new Rule", edit{rl + ".domain", "b.example.com"}),
		minLength("Rule", rl+".domain"),
		maxLength("Rule", rl+".domain", 80),
		minLength("Rule", rl+".url"),
		maxLength("Rule", rl+".url", 200),
		enum("Rule", rl+".scheduler", "RR", `"WRR", "LEAST_CONN", "IP_HASH"`),
		enum("Rule", rl+".forwardType", "TCP", `"HTTP", "HTTPS", "GRPC"`),
		rule("Rule", "sessionExpireTime is 0 (off) or 30-3600 seconds", edit{rl + ".sessionExpireTime", "1"}),
	)
	add(rangeOf("Rule", rl+".sessionExpireTime", 0, 3600)...)
	add(healthCheckCases("Rule", rl+".healthCheck")...)

	const ts = "spec.forProvider"
	many := make([]string, 501)
	for i := range many {
		many[i] = fmt.Sprintf("{ip: 10.0.%d.%d, port: 80}", i/250, i%250+1)
	}
	add(
		immutable("TargetSet", "listenerId is immutable; create a new TargetSet", edit{ts + ".listenerId", "lbl-2"}),
		immutable("TargetSet", "ruleId is immutable; create a new TargetSet", edit{ts + ".ruleId", "loc-2"}),
		rule("TargetSet", "set exactly one of ip and instanceId", edit{ts + ".targets.0.instanceId", "ins-2"}),
		rule("TargetSet", "set exactly one of ip and instanceId", edit{ts + ".targets.0.ip", del}),
		bad{kind: "TargetSet", edits: []edit{{ts + ".targets", "[" + strings.Join(many, ",") + "]"}}, check: "maxItems", want: "must have at most 500 items"},
	)
	add(
		enum("TargetSet", ts+".source.services.0.backend", "ENI", `"NodePort", "PodIP", "HostPort"`),
		enum("TargetSet", ts+".source.pods.0.backend", "NodePort", `"PodIP", "HostPort"`),
		minLength("TargetSet", ts+".source.services.0.name"),
		minLength("TargetSet", ts+".source.pods.0.name"),
		rule("TargetSet", "name at least one service or pod", edit{ts + ".source", "{includeNotReady: true}"}),
		bad{kind: "TargetSet", edits: []edit{{ts + ".source.services.0.subsets.0.labelSelector", "{}"}}, check: "minProperties", want: "should have at least 1 properties"},
	)
	add(rangeOf("TargetSet", ts+".source.services.0.weight", 0, 100)...)
	add(rangeOf("TargetSet", ts+".source.services.0.subsets.0.weight", 0, 100)...)
	add(rangeOf("TargetSet", ts+".source.pods.0.port", 1, 65535)...)
	add(rangeOf("TargetSet", ts+".source.pods.0.weight", 0, 100)...)
	// Region, on every kind that reaches the cloud by itself.
	const region = "region is a Tencent Cloud region such as ap-shanghai"
	const setOnce = "region cannot be set or unset after creation"
	for _, k := range []string{"Listener", "Rule", "TargetSet"} {
		add(
			rule(k, region, edit{"spec.forProvider.region", "Shanghai"}),
			immutable(k, "region is immutable", edit{"spec.forProvider.region", "ap-shanghai"}),
			immutable(k, setOnce, edit{"spec.forProvider.region", del}),
		)
	}
	add(
		rule("LoadBalancer", region, edit{"spec.forProvider.region", "Shanghai"}),
		immutable("LoadBalancer", "region is immutable: it cannot be set, changed or unset after creation", edit{"spec.forProvider.region", "ap-shanghai"}),
		rule("PortPool", region, edit{"spec.forProvider.autoCreate.template.region", "Shanghai"}),
		rule("PortPool", "auto-created load balancers are in the provider config's region; template.region is not supported",
			edit{"spec.forProvider.autoCreate.template.region", "ap-shanghai"}),
	)
	add(rangeOf("TargetSet", ts+".targets.0.port", 1, 65535)...)
	add(rangeOf("TargetSet", ts+".targets.0.weight", 0, 100)...)

	const pp = "spec.forProvider"
	add(
		rule("PortPool", "endPort must not be below startPort", edit{pp + ".endPort", "29999"}, edit{pp + ".segmentLength", del}),
		rule("PortPool", "the port range must be a whole number of segments", edit{pp + ".endPort", "30105"}),
		rule("PortPool", segmentTooLong, edit{pp + ".endPort", "30005"}),
		// tke-extend's multi-ISP HostPort guide: segments of 10001 ports
		// from 30000 go past 65535 after three of them; from 60000 not one fits.
		rule("PortPool", segmentTooLong, edit{pp + ".startPort", "60000"}, edit{pp + ".endPort", "65535"}, edit{pp + ".segmentLength", "10001"}),
		rule("PortPool", "segments (port-range listeners) are only for TCP and UDP", edit{pp + ".protocols", "[TCP_SSL]"}, edit{pp + ".listener.certificate", "{certId: c}"}),
		rule("PortPool", "give load balancers (ids, references or a selector) or autoCreate", edit{pp + ".loadBalancerIds", del}, edit{pp + ".autoCreate", del}),
		immutable("PortPool", "startPort is immutable", edit{pp + ".startPort", "30010"}),
		immutable("PortPool", "endPort may grow but not shrink", edit{pp + ".endPort", "30089"}),
		immutable("PortPool", "segmentLength is immutable", edit{pp + ".segmentLength", "5"}),
		enum("PortPool", pp+".protocols", "[SCTP]", `"TCP", "UDP", "TCP_SSL", "QUIC"`),
		bad{kind: "PortPool", edits: []edit{{pp + ".protocols", "[TCP, UDP, QUIC]"}}, check: "maxItems", want: "must have at most 2 items"},
		enum("PortPool", pp+".allocationPolicy", "RoundRobin", `"LeastUsed", "InOrder", "Random"`),
		enum("PortPool", pp+".listener.scheduler", "RR", `"WRR", "LEAST_CONN", "IP_HASH"`),
		rule("PortPool", "sessionExpireTime is 0 (off) or 30-3600 seconds", edit{pp + ".listener.sessionExpireTime", "10"}),
		minimum("PortPool", pp+".autoCreate.minFreeSlots", 1),
		enum("PortPool", "spec.consumers.namespaces.from", "Others", `"Same", "All", "Selector"`),
		minimum("PortPool", "spec.consumers.maxBindingsPerNamespace", 1),
		rule("PortPool", "selector is required with from: Selector, and only then", edit{"spec.consumers", "{namespaces: {from: Selector}}"}),
	)
	add(rangeOf("PortPool", pp+".startPort", 1, 65535)...)
	add(rangeOf("PortPool", pp+".endPort", 1, 65535)...)
	add(rangeOf("PortPool", pp+".segmentLength", 1, 65535)...)
	add(rangeOf("PortPool", pp+".listener.sessionExpireTime", 0, 3600)...)
	add(rangeOf("PortPool", pp+".autoCreate.maxLoadBalancers", 1, 100)...)
	add(healthCheckCases("PortPool", pp+".listener.healthCheck")...)
	// Certificates are for TCP_SSL and QUIC, which take no segments.
	for _, c := range certificateCases("PortPool", pp+".listener.certificate") {
		c.edits = append([]edit{{pp + ".protocols", "[QUIC]"}, {pp + ".segmentLength", del}, {pp + ".listener.certificate", "{certId: c}"}}, c.edits...)
		add(c)
	}
	add(lbCases("PortPool", pp+".autoCreate.template")...)

	add(portRequestCases("PodAddress")...)
	add(portRequestCases("PodAddressPolicy")...)
	const ipv4 = "must be an IPv4 address"
	add(
		rule("NetPool", "net "+ipv4, edit{"spec.net", `"fd00::"`}),
		rule("NetPool", "gateway "+ipv4, edit{"spec.gateway", "gw"}),
		rule("NetPool", "every availableIP "+ipv4, edit{"spec.availableIPs", "[10.9.0.x]"}),
		rule("NetPool", "every host must be an IP address", edit{"spec.hosts", "[node-1]"}),
		rule("NetPool", "net must be the first address of its subnet: no host bits set below mask", edit{"spec.net", "10.9.0.4"}),
		rule("NetPool", "gateway must be inside net/mask", edit{"spec.gateway", "10.9.1.1"}),
		rule("NetPool", "every availableIP must be inside net/mask", edit{"spec.availableIPs", "[10.9.3.7]"}),
		rule("NetPool", "the gateway cannot be an availableIP", edit{"spec.availableIPs", "[10.9.0.1]"}),
		immutable("NetPool", "net is immutable", edit{"spec.net", "10.8.0.0"}, edit{"spec.gateway", "10.8.0.1"}, edit{"spec.availableIPs", del}),
		immutable("NetPool", "mask is immutable", edit{"spec.mask", "16"}),
		immutable("NetPool", "gateway is immutable", edit{"spec.gateway", "10.9.0.2"}),
		maxLength("NetPool", "spec.net", 15),
		maxLength("NetPool", "spec.gateway", 15),
		maxLength("NetPool", "spec.hosts.0", 39),
		maxLength("NetPool", "spec.availableIPs.0", 15),
		rule("NetIPClaim", "expiredDuration is a non-negative duration such as 30s, 5m or 2h45m (units ns, us, ms, s, m, h)", edit{"spec.expiredDuration", "forever"}),
	)
	add(rangeOf("NetPool", "spec.mask", 1, 32)...)
	manyIPs := make([]string, 1025)
	for i := range manyIPs {
		manyIPs[i] = fmt.Sprintf("10.9.%d.%d", i/250, i%250+2)
	}
	add(
		bad{kind: "NetPool", edits: []edit{{"spec.net", "10.9.0.0"}, {"spec.mask", "16"}, {"spec.availableIPs", "[" + strings.Join(manyIPs, ",") + "]"}}, check: "maxItems", want: "must have at most 1024 items"},
		bad{kind: "NetPool", edits: []edit{{"spec.hosts", "[" + strings.Join(manyIPs, ",") + "]"}}, check: "maxItems", want: "must have at most 1024 items"},
	)
	add(providerConfigCases("ProviderConfig")...)
	add(providerConfigCases("ClusterProviderConfig")...)
	add(minLength("ClusterProviderConfig", "spec.credentials.secretRef.namespace"))
	add(
		rule("ClusterProviderConfig", "a ClusterProviderConfig has no namespace of its own: from is All or Selector", edit{"spec.consumers", "{namespaces: {from: Same}}"}),
		rule("ClusterProviderConfig", "a ClusterProviderConfig has no namespace of its own: from is All or Selector", edit{"spec.consumers", "{namespaces: {}}"}),
		rule("ClusterProviderConfig", "selector is required with from: Selector, and only then", edit{"spec.consumers", "{namespaces: {from: Selector}}"}),
		enum("ClusterProviderConfig", "spec.consumers.namespaces.from", "Everyone", `"Same", "All", "Selector"`),
	)
	add(grantCases()...)
	add(
		enum("LoadBalancer", "spec.consumers.namespaces.from", "Everyone", `"Same", "All", "Selector"`),
		minimum("LoadBalancer", "spec.consumers.maxListenersPerNamespace", 1),
		rule("LoadBalancer", "selector is required with from: Selector, and only then", edit{"spec.consumers", "{namespaces: {from: Selector}}"}),
	)
	add(minLength("RemotePod", "spec.cluster"))
	add(workloadClusterCases()...)
	add(clbPortPoolCases()...)
	// tke-extend's bindings: its own enum, nothing of ours added.
	for _, k := range []string{"CLBPodBinding", "CLBNodeBinding"} {
		add(enum(k, "spec.ports.0.protocol", "SCTP", `"TCP", "UDP", "TCPUDP", "TCP_SSL", "QUIC"`))
	}
	return bs
}

// grantCases: a ClusterProviderConfig's grants of untagged objects, their
// bounds and their consent (never from: Same).
func grantCases() []bad {
	all := edit{"spec.consumers.namespaces", "{from: All}"}
	grants := make([]string, 65)
	for i := range grants {
		grants[i] = "{namespaces: {from: All}}"
	}
	ids := make([]string, 257)
	for i := range ids {
		ids[i] = fmt.Sprintf("lb-%08d", i)
	}
	tags := make([]string, 17)
	for i := range tags {
		tags[i] = fmt.Sprintf("k%d: v", i)
	}
	return []bad{
		{kind: "ClusterProviderConfig", edits: []edit{all, {"spec.consumers.grants", "[" + strings.Join(grants, ",") + "]"}}, check: "maxItems", want: "must have at most 64 items"},
		{kind: "ClusterProviderConfig", edits: []edit{all, {"spec.consumers.grants", "[{namespaces: {from: All}}]"}, {"spec.consumers.grants.0.ids", "[" + strings.Join(ids, ",") + "]"}},
			check: "maxItems", want: "must have at most 256 items"},
		{kind: "ClusterProviderConfig", edits: []edit{all, {"spec.consumers.grants", "[{namespaces: {from: All}}]"}, {"spec.consumers.grants.0.tags", "{" + strings.Join(tags, ",") + "}"}},
			check: "maxProperties", want: "must have at most 16 items"},
		rule("ClusterProviderConfig", "a ClusterProviderConfig has no namespace of its own: namespaces.from is All or Selector",
			all, edit{"spec.consumers.grants", "[{ids: [lb-1], namespaces: {from: Same}}]"}),
	}
}

// The rules on a segment longer than the ports it has.
const (
	segmentTooLong    = "segmentLength is longer than the port range: one segment (one port-range listener) needs endPort at least startPort + segmentLength - 1, and a listener's ports end at 65535"
	clbSegmentTooLong = "segmentLength is longer than the pool's ports: one segment (one port-range listener) from startPort must end by endPort, or by 65535, the last port of a listener, when endPort is unset"
)

// clbPortPoolCases: tke-extend's CLBPortPool, its own checks and the rules
// of its admission webhook.
func clbPortPoolCases() []bad {
	const k, ac = "CLBPortPool", "spec.autoCreate"
	const prm = ac + ".parameters"
	bs := []bad{
		rule(k, "give exsistedLoadBalancerIDs or enable autoCreate", edit{"spec.exsistedLoadBalancerIDs", del}, edit{ac + ".enabled", "false"}),
		rule(k, "endPort must be greater than startPort", edit{"spec.endPort", "30000"}),
		rule(k, "endPort and listenerQuota cannot both be given", edit{"spec.listenerQuota", "50"}, edit{ac + ".enabled", "false"}),
		rule(k, "autoCreate cannot be enabled with listenerQuota", edit{"spec.listenerQuota", "50"}, edit{"spec.endPort", del}),
		rule(k, clbSegmentTooLong, edit{"spec.segmentLength", "101"}),
		rule(k, clbSegmentTooLong, edit{"spec.startPort", "60000"}, edit{"spec.endPort", del}, edit{"spec.segmentLength", "10001"}),
		rule(k, "region is a Tencent Cloud region such as ap-chengdu", edit{"spec.region", "Chengdu"}),
		immutable(k, "startPort is immutable", edit{"spec.startPort", "30010"}),
		immutable(k, "endPort is immutable", edit{"spec.endPort", "30199"}),
		immutable(k, "segmentLength is immutable", edit{"spec.segmentLength", "5"}),
		immutable(k, "region is immutable", edit{"spec.region", "ap-shanghai"}),
		enum(k, "spec.lbPolicy", "LeastUsed", `"Uniform", "InOrder", "Random"`),
		enum(k, prm+".vipIsp", "CTT", `"CMCC", "CUCC", "CTCC", "BGP"`),
		enum(k, prm+".addressIPVersion", "IPV5", `"IPV4", "IPV6", "IPv6FullChain", "IPv4"`),
		enum(k, prm+".loadBalancerType", "PUBLIC", `"OPEN", "INTERNAL"`),
		enum(k, prm+".slaType", "clb.c1.small", `"clb.c2.medium", "clb.c3.small", "clb.c3.medium", "clb.c4.small", "clb.c4.medium", "clb.c4.large", "clb.c4.xlarge"`),
		enum(k, prm+".lbChargeType", "FREE", `"POSTPAID_BY_HOUR", "PREPAID"`),
		enum(k, prm+".internetAccessible.internetChargeType", "FREE", `"TRAFFIC_POSTPAID_BY_HOUR", "BANDWIDTH_POSTPAID_BY_HOUR", "BANDWIDTH_PACKAGE", "BANDWIDTH_PREPAID"`),
		enum(k, prm+".internetAccessible.bandwidthpkgSubType", "MULTI", `"SINGLEISP", "BGP"`),
	}
	tags := make([]string, 21)
	for i := range tags {
		tags[i] = fmt.Sprintf("{tagKey: k%d, tagValue: v}", i)
	}
	bs = append(bs, bad{kind: k, edits: []edit{{prm + ".tags", "[" + strings.Join(tags, ",") + "]"}}, check: "maxItems", want: "must have at most 20 items"})
	bs = append(bs, rule(k, reservedTags, edit{prm + ".tags", "[{tagKey: crossplane-portpool-uid, tagValue: x}]"}))
	bs = append(bs, rangeOf(k, "spec.startPort", 1, 65535)...)
	bs = append(bs, rangeOf(k, "spec.endPort", 1, 65535)...)
	bs = append(bs, rangeOf(k, "spec.segmentLength", 0, 65535)...)
	bs = append(bs, rangeOf(k, "spec.listenerQuota", 1, 65535)...)
	bs = append(bs, rangeOf(k, "spec.listenerPrecreate.tcp", 0, 65535)...)
	bs = append(bs, rangeOf(k, "spec.listenerPrecreate.udp", 0, 65535)...)
	bs = append(bs, rangeOf(k, ac+".maxLoadBalancers", 1, 65535)...)
	bs = append(bs, rangeOf(k, prm+".internetAccessible.internetMaxBandwidthOut", 1, 65535)...)
	return bs
}

// workloadClusterCases: the bounds an admin declares for an agent.
func workloadClusterCases() []bad {
	const k = "WorkloadCluster"
	cidrs := func(n int) string {
		c := make([]string, n)
		for i := range c {
			c[i] = fmt.Sprintf("10.%d.0.0/16", i)
		}
		return "[" + strings.Join(c, ",") + "]"
	}
	pools := make([]string, 65)
	for i := range pools {
		pools[i] = fmt.Sprintf("{name: p%d}", i)
	}
	return []bad{
		rule(k, "every podCIDR must be a network such as 10.244.0.0/16, without host bits", edit{"spec.podCIDRs", "[10.244.0.1/16]"}),
		rule(k, "every nodeCIDR must be a network such as 10.0.0.0/24, without host bits", edit{"spec.nodeCIDRs", "[10.0.0.7]"}),
		rule(k, "agentTokenLifetime must be between 10m and 24h", edit{"spec.agentTokenLifetime", "48h"}),
		{kind: k, edits: []edit{{"spec.podCIDRs", "[]"}}, check: "minItems", want: "should have at least 1 items"},
		{kind: k, edits: []edit{{"spec.nodeCIDRs", "[]"}}, check: "minItems", want: "should have at least 1 items"},
		{kind: k, edits: []edit{{"spec.pools", "[]"}}, check: "minItems", want: "should have at least 1 items"},
		{kind: k, edits: []edit{{"spec.podCIDRs", cidrs(33)}}, check: "maxItems", want: "must have at most 32 items"},
		{kind: k, edits: []edit{{"spec.nodeCIDRs", cidrs(33)}}, check: "maxItems", want: "must have at most 32 items"},
		{kind: k, edits: []edit{{"spec.pools", "[" + strings.Join(pools, ",") + "]"}}, check: "maxItems", want: "must have at most 64 items"},
		maxLength(k, "spec.podCIDRs.0", 43),
		maxLength(k, "spec.nodeCIDRs.0", 43),
		{kind: k, edits: []edit{{"spec.pools", "[{name: x}]"}, {"spec.pools.0.name", `""`}}, check: "minLength", want: "should be at least 1 chars long"},
	}
}

// object builds the valid object of kind k with the given name.
func object(t *testing.T, k, name string) *unstructured.Unstructured {
	t.Helper()
	kd, ok := kinds[k]
	if !ok {
		t.Fatalf("no valid %s", k)
	}
	spec := map[string]any{}
	if err := yaml.Unmarshal([]byte(kd.spec), &spec); err != nil {
		t.Fatalf("%s spec: %v", k, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": kd.apiVersion, "kind": k, "spec": spec}}
	u.SetName(name)
	if !kd.cluster {
		u.SetNamespace(ns)
	}
	return u
}

// apply sets e on u; a path into a missing map creates it.
func apply(t *testing.T, u *unstructured.Unstructured, e edit) {
	t.Helper()
	parts := strings.Split(e.path, ".")
	var cur any = u.Object
	for i, p := range parts {
		last := i == len(parts)-1
		var v any
		if !last {
			v = map[string]any{}
		} else if e.yaml != del {
			if err := yaml.Unmarshal([]byte(e.yaml), &v); err != nil {
				t.Fatalf("edit %s: %v", e.path, err)
			}
		}
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if e.yaml == del {
					delete(c, p)
				} else {
					c[p] = v
				}
				return
			}
			if _, ok := c[p]; !ok {
				c[p] = v
			}
			cur = c[p]
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n >= len(c) {
				t.Fatalf("edit %s: no item %s", e.path, p)
			}
			if last {
				c[n] = v
				return
			}
			cur = c[n]
		default:
			t.Fatalf("edit %s: %s is not a map or a list", e.path, p)
		}
	}
}

// TestValidObjects guards the table: every base object is accepted, so a
// case's refusal is due to its edits.
func TestValidObjects(t *testing.T) {
	ctx := context.Background()
	for k := range kinds {
		u := object(t, k, "valid-"+strings.ToLower(k))
		if err := kube.Create(ctx, u); err != nil {
			t.Errorf("a valid %s is refused: %v", k, err)
		}
	}
}

// TestLongSegments: the segments of tke-extend's own guide (1001 ports
// for a node's HostPort range, 10001 in its multi-ISP example) and one
// port-range listener over every port are accepted, as the CLB API takes
// them (CreateListener EndPort up to 65535).
func TestLongSegments(t *testing.T) {
	ctx := context.Background()
	goods := map[string][]edit{
		"CLBPortPool": {{"spec.endPort", del}, {"spec.segmentLength", "1001"}},
		"CLBPortPool/multi-isp": {{"spec.endPort", del}, {"spec.segmentLength", "10001"}, {"spec.listenerPrecreate", del},
			{"spec.exsistedLoadBalancerIDs", "[lb-04i895jh, lb-04i87jjk]"}},
		"CLBPortPool/whole": {{"spec.startPort", "1"}, {"spec.endPort", del}, {"spec.segmentLength", "65535"}},
		"PortPool":          {{"spec.forProvider.endPort", "60002"}, {"spec.forProvider.segmentLength", "10001"}},
		"PortPool/whole":    {{"spec.forProvider.startPort", "1"}, {"spec.forProvider.endPort", "65535"}, {"spec.forProvider.segmentLength", "65535"}},
	}
	for name, edits := range goods {
		k, _, _ := strings.Cut(name, "/")
		u := object(t, k, "long-"+strings.ToLower(strings.ReplaceAll(name, "/", "-")))
		for _, e := range edits {
			apply(t, u, e)
		}
		if err := kube.Create(ctx, u); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestBadInput applies every bad case to the apiserver: each must be
// refused as Invalid with its message, and no message may be a bare CEL
// expression (a rule without a message reads "failed rule: …").
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	bs := cases()
	for i, b := range bs {
		name := fmt.Sprintf("bad-%d", i)
		u := object(t, b.kind, name)
		if b.update {
			if err := kube.Create(ctx, u); err != nil {
				t.Errorf("%v: cannot create the valid object: %v", b, err)
				continue
			}
		}
		for _, e := range b.edits {
			apply(t, u, e)
		}
		var err error
		if b.update {
			err = kube.Update(ctx, u)
		} else {
			err = kube.Create(ctx, u)
		}
		switch {
		case err == nil:
			t.Errorf("%v: accepted, want refused with %q", b, b.want)
		case !kerrors.IsInvalid(err):
			t.Errorf("%v: got %v, want an Invalid error", b, err)
		case !strings.Contains(err.Error(), b.want):
			t.Errorf("%v: got %q, want a message with %q", b, err, b.want)
		case strings.Contains(err.Error(), "failed rule"):
			t.Errorf("%v: the message shows a bare CEL rule: %q", b, err)
		}
	}
	t.Logf("%d bad objects refused with their messages", len(bs))
}

// TestCoverage requires a case for every constraint of the CRDs' own
// fields: a new marker without a case fails here.
func TestCoverage(t *testing.T) {
	covered := map[string]bool{}
	for _, b := range cases() {
		covered[b.key()] = true
	}
	want := coverage(t)
	var missing []string
	for _, k := range want {
		if !covered[k] {
			missing = append(missing, k)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("constraints without a bad-input case:\n%s", strings.Join(missing, "\n"))
	}
	t.Logf("%d constraints of %d kinds, all with a case", len(want), len(kinds))
}

// coverage lists the constraints of every CRD in package/crds under spec,
// leaving out what crossplane-runtime adds (management and deletion
// policies, references and selectors).
func coverage(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join(testenv.RepoRoot(), "package", "crds")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, f := range files {
		raw, err := os.ReadFile(f) //nolint:gosec // G304: the repository's own CRDs.
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			t.Fatal(err)
		}
		k := crd.Spec.Names.Kind
		if k == "ProviderConfigUsage" {
			continue // crossplane-runtime's type
		}
		if _, ok := kinds[k]; !ok {
			t.Errorf("no valid %s in kinds: add one and its bad cases", k)
			continue
		}
		spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
		walk(t, k, "spec", &spec, &keys)
	}
	return keys
}

var skipFields = []string{"managementPolicies", "deletionPolicy", "providerConfigRef", "writeConnectionSecretToRef", "publishConnectionDetailsTo"}

func walk(t *testing.T, k, name string, s *apiextensionsv1.JSONSchemaProps, keys *[]string) {
	for _, r := range s.XValidations {
		if r.Message == "" {
			t.Errorf("%s %s: rule %q has no message", k, name, r.Rule)
		}
		*keys = append(*keys, k+" rule: "+r.Message)
	}
	add := func(set bool, check string) {
		if set {
			*keys = append(*keys, k+" "+name+" "+check)
		}
	}
	add(s.Minimum != nil, "minimum")
	add(s.Maximum != nil, "maximum")
	add(len(s.Enum) > 0, "enum")
	add(s.MinLength != nil, "minLength")
	add(s.MaxLength != nil, "maxLength")
	add(s.MinItems != nil, "minItems")
	add(s.MaxItems != nil, "maxItems")
	add(s.MaxProperties != nil, "maxProperties")
	if s.Pattern != "" {
		t.Errorf("%s %s: pattern %q gives a message with only the regular expression; use a rule with a message", k, name, s.Pattern)
	}
	for p, sub := range s.Properties {
		if slices.Contains(skipFields, p) || strings.HasSuffix(p, "IdRef") || strings.HasSuffix(p, "IdRefs") || strings.HasSuffix(p, "IdSelector") {
			continue
		}
		walk(t, k, p, &sub, keys)
	}
	if s.Items != nil && s.Items.Schema != nil {
		// An item's own checks (an enum of list items) belong to the list.
		walk(t, k, name, s.Items.Schema, keys)
	}
}
