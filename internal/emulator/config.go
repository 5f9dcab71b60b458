package emulator

import (
	"fmt"
	"net/netip"
	"time"
)

// Defaults for the local key pair and the region, chosen so that a developer
// can point the SDK at a freshly started emulator without any setup.
const (
	DefaultSecretID  = "AKIDLOCALEMULATOR00000000000000000"
	DefaultSecretKey = "localemulatorsecretkey0000000000"
	DefaultRegion    = "ap-guangzhou"
	DefaultVIPBase   = "127.1.0.1"
	// DefaultVIP6Base starts the IPv6 VIP pool in a unique local range
	// (fd00::/8) apart from any /64 a host commonly uses.
	DefaultVIP6Base = "fdc1:b000::1"
)

// Quota defaults follow the documented defaults of a fresh account.
const (
	defaultListenerQuota     = 50
	defaultRuleQuota         = 50
	defaultTargetQuota       = 200
	defaultOpenLBQuota       = 100
	defaultInternalLBQuota   = 100
	defaultVIPPoolSize       = 60000
	defaultMaxTasks          = 100000
	defaultEIPQuota          = 20
	defaultEIPBase           = "127.2.0.1"
	defaultEIPPoolSize       = 60000
	defaultPersistInterval   = 200 * time.Millisecond
	defaultRateLimitPerKey   = 20
	defaultTestTaskDuration  = 50 * time.Millisecond
	realisticLatency         = 50 * time.Millisecond
	realisticTaskDuration    = time.Second
	signatureValidityWindow  = 5 * time.Minute
	maxRequestBodyBytes      = 10 << 20
	maxCountedActionNameSize = 64
)

// Credential is one key pair the emulator accepts. A non-empty Token makes
// it a temporary credential: requests must then carry the same X-TC-Token.
type Credential struct {
	SecretID  string
	SecretKey string
	Token     string
}

// Config describes one emulated cloud. The zero value is usable: quotas get
// the real defaults, a zero TaskDuration finishes tasks instantly, a zero
// RateLimit disables throttling and a zero Latency adds none. Use
// DefaultConfig or RealisticConfig for the documented profiles.
type Config struct {
	// Credentials are the accepted key pairs. Empty means one pair,
	// DefaultSecretID / DefaultSecretKey.
	Credentials []Credential
	// Policies are CAM policies by SecretId, in force from the first call
	// (SetCAMPolicy changes them later). A key without one may do anything.
	Policies map[string]*CAMPolicy
	// Region is the region the binary advertises; requests may use any of
	// Regions. Empty means DefaultRegion.
	Region string
	// Regions lists the regions that exist. Empty means a built-in list of
	// real region names plus Region.
	Regions []string

	// Latency is added to every call; ActionLatency adds more per action.
	Latency       time.Duration
	ActionLatency map[string]time.Duration

	// TaskDuration is how long an asynchronous task stays in progress
	// (DescribeTaskStatus Status 2). Zero completes tasks before the
	// response is written. ActionTaskDuration overrides it per action.
	TaskDuration       time.Duration
	ActionTaskDuration map[string]time.Duration

	// RateLimit is the number of requests per second allowed per action
	// and per SecretId (token bucket, burst = rate). Zero disables it.
	// ActionRateLimit overrides it per action (a zero entry disables it).
	RateLimit       float64
	ActionRateLimit map[string]float64

	// Quotas; zero means the real default.
	ListenerQuota   int // listeners per load balancer (TOTAL_LISTENER_QUOTA)
	RuleQuota       int // rules per listener (TOTAL_LISTENER_RULE_QUOTA)
	TargetQuota     int // targets per listener or rule (TOTAL_TARGET_BIND_QUOTA)
	OpenLBQuota     int // OPEN load balancers per region (TOTAL_OPEN_CLB_QUOTA)
	InternalLBQuota int // INTERNAL load balancers per region (TOTAL_INTERNAL_CLB_QUOTA)

	// EIPQuota is the number of EIPs an account may hold per region
	// (AddressQuotaLimitExceeded); zero means 20, a fresh real account's.
	// EIPDailyAllocateLimit is how many EIPs may be allocated per region
	// and UTC day of the emulator's clock, released ones included
	// (AddressQuotaLimitExceeded.DailyAllocate); zero means twice
	// EIPQuota, the real rule.
	EIPQuota              int
	EIPDailyAllocateLimit int
	// EIPBase is the first public address handed to EIPs and EIPPoolSize
	// the pool length (loopback by default, like VIPs).
	EIPBase     string
	EIPPoolSize int
	// AutoENI gives any private IPv4 address an ENI (no instance) the first
	// time DescribeNetworkInterfaces looks it up with the address-ip filter,
	// so that tests whose Pods get made-up IPs need not register ENIs.
	AutoENI bool

	// ProbeTargets makes DescribeTargetHealth check targets on loopback
	// addresses for real: a TCP connection to the target (or its check
	// port) that fails marks it Dead, for listeners and rules whose
	// health check is on and of type TCP or HTTP. Other targets keep the
	// simulated verdict (see SetTargetHealth).
	ProbeTargets bool

	// VPCLoopbackCIDR maps the VPC's private addresses onto loopback: a
	// target inside it is reached, by the data plane and by the probes of
	// ProbeTargets, at the address whose first octet is 127 and whose
	// other three are the target's (10.1.2.3 at 127.1.2.3). The API still
	// shows the target's own address. An IPv4 prefix of length 8 to 32;
	// the zero value maps nothing.
	VPCLoopbackCIDR netip.Prefix

	// VIPBase is the first address of the VIP pool and VIPPoolSize its
	// length. Loopback addresses let a data plane bind every VIP locally.
	VIPBase     string
	VIPPoolSize int

	// VIP6Base is the first address of the IPv6 VIP pool (IPv6 and
	// IPv6FullChain load balancers) and VIP6PoolSize its length. It must
	// be a unique local address (fd00::/8): the data plane binds such a
	// VIP only when the address is on a local device, never routes it.
	VIP6Base     string
	VIP6PoolSize int

	// Instances maps CVM instance ids to their primary private IP, used
	// when a target is registered by InstanceId. Unknown instances get a
	// stable address derived from the id.
	Instances map[string]string

	// StateFile, when set, is loaded at start and rewritten after changes
	// (at most every PersistInterval) and on Close.
	StateFile       string
	PersistInterval time.Duration

	// DataPlane, when set, receives the full set of L4 routes after every
	// completed mutation.
	DataPlane DataPlane

	// Logf receives diagnostic messages; nil discards them.
	Logf func(format string, args ...any)

	// Clock overrides time.Now, so tests can move the emulator's clock
	// (for example to make the SDK's timestamps look expired).
	Clock func() time.Time

	// MaxTasks bounds the task table; the oldest finished tasks are
	// forgotten first. Zero means 100000.
	MaxTasks int
}

// DefaultConfig is the profile for tests: no latency, 50 ms tasks and the
// real rate limit of 20 requests per second per action and key.
func DefaultConfig() Config {
	return Config{
		TaskDuration: defaultTestTaskDuration,
		RateLimit:    defaultRateLimitPerKey,
	}
}

// RealisticConfig is the profile for benchmarks: 50 ms per call, 1 s tasks,
// 20 requests per second per action and 50 listeners per load balancer.
func RealisticConfig() Config {
	return Config{
		Latency:       realisticLatency,
		TaskDuration:  realisticTaskDuration,
		RateLimit:     defaultRateLimitPerKey,
		ListenerQuota: defaultListenerQuota,
	}
}

// ProfileConfig returns the named profile: "default" or "realistic".
func ProfileConfig(name string) (Config, error) {
	switch name {
	case "", "default":
		return DefaultConfig(), nil
	case "realistic":
		return RealisticConfig(), nil
	}
	return Config{}, fmt.Errorf("unknown profile %q (want default or realistic)", name)
}

// knownRegions is returned fresh on every call so that no package state is
// shared between emulators.
func knownRegions() []string {
	return []string{
		"ap-guangzhou", "ap-shanghai", "ap-nanjing", "ap-beijing", "ap-chengdu",
		"ap-chongqing", "ap-hongkong", "ap-singapore", "ap-jakarta", "ap-seoul",
		"ap-tokyo", "ap-bangkok", "ap-mumbai", "na-siliconvalley", "na-ashburn",
		"eu-frankfurt", "sa-saopaulo", "ap-shanghai-fsi", "ap-shenzhen-fsi", "ap-beijing-fsi",
	}
}

// withDefaults fills the fields whose zero value has no useful meaning.
func (c Config) withDefaults() Config {
	if len(c.Credentials) == 0 {
		c.Credentials = []Credential{{SecretID: DefaultSecretID, SecretKey: DefaultSecretKey}}
	}
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if len(c.Regions) == 0 {
		c.Regions = knownRegions()
	}
	found := false
	for _, r := range c.Regions {
		found = found || r == c.Region
	}
	if !found {
		c.Regions = append(append([]string(nil), c.Regions...), c.Region)
	}
	if c.ListenerQuota <= 0 {
		c.ListenerQuota = defaultListenerQuota
	}
	if c.RuleQuota <= 0 {
		c.RuleQuota = defaultRuleQuota
	}
	if c.TargetQuota <= 0 {
		c.TargetQuota = defaultTargetQuota
	}
	if c.OpenLBQuota <= 0 {
		c.OpenLBQuota = defaultOpenLBQuota
	}
	if c.InternalLBQuota <= 0 {
		c.InternalLBQuota = defaultInternalLBQuota
	}
	if c.EIPQuota <= 0 {
		c.EIPQuota = defaultEIPQuota
	}
	if c.EIPDailyAllocateLimit <= 0 {
		c.EIPDailyAllocateLimit = 2 * c.EIPQuota
	}
	if c.EIPBase == "" {
		c.EIPBase = defaultEIPBase
	}
	if c.EIPPoolSize <= 0 {
		c.EIPPoolSize = defaultEIPPoolSize
	}
	if c.VIPBase == "" {
		c.VIPBase = DefaultVIPBase
	}
	if c.VIPPoolSize <= 0 {
		c.VIPPoolSize = defaultVIPPoolSize
	}
	if c.VIP6Base == "" {
		c.VIP6Base = DefaultVIP6Base
	}
	if c.VIP6PoolSize <= 0 {
		c.VIP6PoolSize = defaultVIPPoolSize
	}
	if c.PersistInterval <= 0 {
		c.PersistInterval = defaultPersistInterval
	}
	if c.MaxTasks <= 0 {
		c.MaxTasks = defaultMaxTasks
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return c
}
