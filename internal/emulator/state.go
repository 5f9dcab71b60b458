package emulator

import (
	"math/rand/v2"
	"slices"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
)

// The state types below are the emulator's own model of the cloud. They
// carry JSON tags because they are also the persisted form; fields that
// only make sense while the process runs are tagged "-".

type lbState struct {
	ID               string           `json:"id"`
	Seq              uint64           `json:"seq"` // creation order, breaks CreateTime ties
	Name             string           `json:"name"`
	Type             string           `json:"type"` // OPEN | INTERNAL
	Region           string           `json:"region"`
	VpcID            string           `json:"vpcId"`
	NumericalVpcID   int64            `json:"numericalVpcId"`
	SubnetID         string           `json:"subnetId,omitempty"`
	ProjectID        int64            `json:"projectId"`
	VIP              string           `json:"vip"`                // the IPv6 address (AddressIPv6) for IPv6 versions
	IPv6Mode         string           `json:"ipv6Mode,omitempty"` // IPv6Nat64 or IPv6FullChain; empty for IPv4
	VipIsp           string           `json:"vipIsp"`
	Domain           string           `json:"domain,omitempty"`
	DynamicVip       bool             `json:"dynamicVip,omitempty"` // domain-based: Domain is also DescribeLoadBalancers' Domain
	Zone             string           `json:"zone"`
	Status           uint64           `json:"status"` // 0 creating, 1 normal
	CreateTime       time.Time        `json:"createTime"`
	StatusTime       time.Time        `json:"statusTime"`
	Tags             []tag            `json:"tags,omitempty"`
	ChargeType       string           `json:"chargeType"`
	NetChargeType    string           `json:"netChargeType"`
	BandwidthOut     int64            `json:"bandwidthOut"`
	BandwidthPkgType string           `json:"bandwidthPkgType,omitempty"`
	SlaType          string           `json:"slaType,omitempty"`
	DeleteProtect    bool             `json:"deleteProtect,omitempty"`
	PassToTarget     bool             `json:"passToTarget,omitempty"`
	SnatPro          bool             `json:"snatPro,omitempty"`
	Listeners        []*listenerState `json:"listeners,omitempty"`
	ListenerSeq      uint64           `json:"listenerSeq"`

	// task is the in-flight asynchronous task holding this load balancer.
	task *task
	// committed is the configuration before task's change; the data plane
	// keeps serving it until the task completes, and a failed task
	// restores it.
	committed *lbState
}

type tag struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type listenerState struct {
	ID                  string                 `json:"id"`
	Name                string                 `json:"name"`
	Protocol            string                 `json:"protocol"`
	Port                int64                  `json:"port"`
	EndPort             int64                  `json:"endPort,omitempty"`
	CreateTime          time.Time              `json:"createTime"`
	HealthCheck         *clb.HealthCheck       `json:"healthCheck,omitempty"`
	Certificate         *clb.CertificateOutput `json:"certificate,omitempty"`
	Scheduler           string                 `json:"scheduler,omitempty"`
	SessionExpireTime   int64                  `json:"sessionExpireTime,omitempty"`
	SniSwitch           int64                  `json:"sniSwitch,omitempty"`
	TargetType          string                 `json:"targetType,omitempty"`
	SessionType         string                 `json:"sessionType,omitempty"`
	KeepaliveEnable     int64                  `json:"keepaliveEnable,omitempty"`
	DeregisterTargetRst bool                   `json:"deregisterTargetRst,omitempty"`
	MaxConn             int64                  `json:"maxConn"`
	MaxCps              int64                  `json:"maxCps"`
	IdleConnectTimeout  int64                  `json:"idleConnectTimeout,omitempty"`
	SnatEnable          bool                   `json:"snatEnable,omitempty"`
	ProxyProtocol       bool                   `json:"proxyProtocol,omitempty"`
	DataCompressMode    string                 `json:"dataCompressMode,omitempty"`
	HealthLocationID    string                 `json:"healthLocationId,omitempty"` // L4: the rule id DescribeTargetHealth reports
	Targets             []*targetState         `json:"targets,omitempty"`          // L4 only
	Rules               []*ruleState           `json:"rules,omitempty"`            // L7 only
}

type ruleState struct {
	ID                string                 `json:"id"`
	Domain            string                 `json:"domain"`
	URL               string                 `json:"url"`
	CreateTime        time.Time              `json:"createTime"`
	SessionExpireTime int64                  `json:"sessionExpireTime,omitempty"`
	HealthCheck       *clb.HealthCheck       `json:"healthCheck,omitempty"`
	Certificate       *clb.CertificateOutput `json:"certificate,omitempty"`
	Scheduler         string                 `json:"scheduler"`
	ForwardType       string                 `json:"forwardType"`
	DefaultServer     bool                   `json:"defaultServer,omitempty"`
	HTTP2             bool                   `json:"http2,omitempty"`
	TargetType        string                 `json:"targetType"`
	Quic              bool                   `json:"quic,omitempty"`
	CookieName        string                 `json:"cookieName,omitempty"`
	TrpcCallee        string                 `json:"trpcCallee,omitempty"`
	TrpcFunc          string                 `json:"trpcFunc,omitempty"`
	Targets           []*targetState         `json:"targets,omitempty"`
}

type targetState struct {
	Type           string    `json:"type"` // CVM | ENI
	InstanceID     string    `json:"instanceId,omitempty"`
	IP             string    `json:"ip"`
	Port           int64     `json:"port"`
	Weight         int64     `json:"weight"`
	Tag            string    `json:"tag,omitempty"`
	RegisteredTime time.Time `json:"registeredTime"`
}

// key identifies a target within one listener or rule: the same backend
// address may be bound on several ports, but only once per port.
func (t *targetState) key() targetKey {
	if t.InstanceID != "" {
		return targetKey{id: t.InstanceID, port: t.Port}
	}
	return targetKey{id: t.IP, port: t.Port}
}

type targetKey struct {
	id   string
	port int64
}

// clone deep-copies a load balancer, without its runtime-only fields.
func (lb *lbState) clone() *lbState {
	c := *lb
	c.task, c.committed = nil, nil
	c.Tags = slices.Clone(lb.Tags)
	c.Listeners = make([]*listenerState, len(lb.Listeners))
	for i, l := range lb.Listeners {
		c.Listeners[i] = l.clone()
	}
	return &c
}

func (l *listenerState) clone() *listenerState {
	c := *l
	c.HealthCheck = cloneHealthCheck(l.HealthCheck)
	c.Certificate = cloneCertificate(l.Certificate)
	c.Targets = cloneTargets(l.Targets)
	c.Rules = make([]*ruleState, len(l.Rules))
	for i, r := range l.Rules {
		rc := *r
		rc.HealthCheck = cloneHealthCheck(r.HealthCheck)
		rc.Certificate = cloneCertificate(r.Certificate)
		rc.Targets = cloneTargets(r.Targets)
		c.Rules[i] = &rc
	}
	return &c
}

func cloneTargets(ts []*targetState) []*targetState {
	if ts == nil {
		return nil
	}
	out := make([]*targetState, len(ts))
	for i, t := range ts {
		tc := *t
		out[i] = &tc
	}
	return out
}

// cloneHealthCheck copies the struct; its pointer fields are never mutated
// in place (updates replace them), so a shallow copy is enough.
func cloneHealthCheck(h *clb.HealthCheck) *clb.HealthCheck {
	if h == nil {
		return nil
	}
	c := *h
	return &c
}

func cloneCertificate(c *clb.CertificateOutput) *clb.CertificateOutput {
	if c == nil {
		return nil
	}
	o := *c
	o.ExtCertIds = slices.Clone(c.ExtCertIds)
	return &o
}

func (lb *lbState) listener(id string) *listenerState {
	for _, l := range lb.Listeners {
		if l.ID == id {
			return l
		}
	}
	return nil
}

func (l *listenerState) rule(id string) *ruleState {
	for _, r := range l.Rules {
		if r.ID == id {
			return r
		}
	}
	return nil
}

func (l *listenerState) ruleByDomainURL(domain, url string) *ruleState {
	for _, r := range l.Rules {
		if r.Domain == domain && r.URL == url {
			return r
		}
	}
	return nil
}

// targetCount counts every bound backend of the load balancer.
func (lb *lbState) targetCount() int {
	n := 0
	for _, l := range lb.Listeners {
		n += len(l.Targets)
		for _, r := range l.Rules {
			n += len(r.Targets)
		}
	}
	return n
}

const idAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// newID returns prefix + 8 lowercase alphanumerics, the real id shape, and
// never repeats an id this emulator has handed out before.
func (s *store) newID(prefix string) string {
	for {
		b := make([]byte, len(prefix)+8)
		copy(b, prefix)
		for i := len(prefix); i < len(b); i++ {
			b[i] = idAlphabet[rand.IntN(len(idAlphabet))]
		}
		id := string(b)
		if _, used := s.usedIDs[id]; !used {
			s.usedIDs[id] = struct{}{}
			return id
		}
	}
}

const hexDigits = "0123456789abcdef"

// newRequestID returns a random lowercase UUID (version 4 layout).
func newRequestID() string {
	var b [36]byte
	hi, lo := rand.Uint64(), rand.Uint64()
	n := 0
	for i := range b {
		switch i {
		case 8, 13, 18, 23:
			b[i] = '-'
			continue
		}
		var nib uint64
		if n < 16 {
			nib = hi >> (uint(n) * 4) & 0xf
		} else {
			nib = lo >> (uint(n-16) * 4) & 0xf
		}
		switch i {
		case 14:
			nib = 4
		case 19:
			nib = 8 | nib&3
		}
		b[i] = hexDigits[nib]
		n++
	}
	return string(b[:])
}

// store is the whole emulated cloud. Every field is guarded by Emulator.mu.
type store struct {
	lbs   map[string]*lbState
	dying map[string]*lbState // deleted, but served until their task completes
	lbSeq uint64

	tasks     map[string]*task  // by task id (a RequestId), aliases included
	taskOrder []string          // insertion order, for pruning
	deals     map[string]string // DealName -> task id
	tokens    map[string]*tokenRecord

	usedIDs    map[string]struct{}
	vips       map[string]string // VIP -> load balancer id
	vipCursor  int
	vip6Cursor int
	vpcs       map[string]vpcInfo // default VPC per region
	health     map[healthKey]bool // targets marked unhealthy by SetTargetHealth
	deletes    []time.Time        // recent non-forced deletions, for FrequencyCheckRisk

	vpc vpcStore
}

type vpcInfo struct {
	ID        string `json:"id"`
	Numerical int64  `json:"numerical"`
}

type healthKey struct {
	ip   string
	port int64
}

// tokenRecord remembers a CreateLoadBalancer ClientToken so that a retried
// request gets the same load balancers back.
type tokenRecord struct {
	Fingerprint string   `json:"fingerprint"`
	LBIDs       []string `json:"lbIds"`
	DealName    string   `json:"dealName"`
	TaskID      string   `json:"taskId"`
}

func newStore() *store {
	return &store{
		lbs:     make(map[string]*lbState),
		dying:   make(map[string]*lbState),
		tasks:   make(map[string]*task),
		deals:   make(map[string]string),
		tokens:  make(map[string]*tokenRecord),
		usedIDs: make(map[string]struct{}),
		vips:    make(map[string]string),
		vpcs:    make(map[string]vpcInfo),
		health:  make(map[healthKey]bool),
		vpc:     newVPCStore(),
	}
}
