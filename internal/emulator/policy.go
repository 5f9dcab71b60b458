package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
)

// EmulatedUIN is the account the emulator's resources belong to, the uin
// in a CAM resource ("qcs::clb:ap-guangzhou:uin/100000000001:clb/lb-…").
const EmulatedUIN = "100000000001"

// CAMPolicy is a CAM policy document, the JSON users attach to a
// sub-account. The emulator honours a subset: version "2.0", and
// statements with an effect (allow or deny), actions ("clb:CreateListener",
// "name/clb:CreateListener", "clb:Describe*", "*") and resources ("*" or
// "qcs:<project>:clb:<region>:uin/<uin>:clb/<lb-id>", "*" wildcards in
// each part). Other fields (principal, condition) are refused rather than
// ignored, so a policy never looks stricter here than it is.
type CAMPolicy struct {
	Version   string         `json:"version"`
	Statement []CAMStatement `json:"statement"`
}

// CAMStatement is one statement of a CAMPolicy.
type CAMStatement struct {
	Effect   string  `json:"effect"`
	Action   CAMList `json:"action"`
	Resource CAMList `json:"resource"`
}

// CAMList is a CAM string-or-list field.
type CAMList []string

// UnmarshalJSON accepts a string or a list of strings, as CAM does.
func (l *CAMList) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = CAMList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings, got %s", b)
	}
	*l = many
	return nil
}

// ParseCAMPolicy parses and checks a CAM policy document.
func ParseCAMPolicy(doc []byte) (*CAMPolicy, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	p := &CAMPolicy{}
	if err := dec.Decode(p); err != nil {
		return nil, fmt.Errorf("CAM policy: %w (the emulator reads version, statement, effect, action and resource only)", err)
	}
	if p.Version != "2.0" {
		return nil, fmt.Errorf("CAM policy: version %q, want \"2.0\"", p.Version)
	}
	if len(p.Statement) == 0 {
		return nil, fmt.Errorf("CAM policy: no statement")
	}
	for i, s := range p.Statement {
		if e := strings.ToLower(s.Effect); e != "allow" && e != "deny" {
			return nil, fmt.Errorf("CAM policy: statement %d: effect %q, want allow or deny", i, s.Effect)
		}
		if len(s.Action) == 0 || len(s.Resource) == 0 {
			return nil, fmt.Errorf("CAM policy: statement %d needs an action and a resource", i)
		}
		for _, a := range s.Action {
			if a != "*" && !strings.Contains(a, ":") {
				return nil, fmt.Errorf("CAM policy: statement %d: action %q, want service:Action (clb:CreateListener) or *", i, a)
			}
		}
		for _, r := range s.Resource {
			if r != "*" && (len(strings.Split(r, ":")) != 6 || !strings.HasPrefix(r, "qcs:")) {
				return nil, fmt.Errorf("CAM policy: statement %d: resource %q, want * or qcs:<project>:<service>:<region>:<account>:<resource>", i, r)
			}
		}
	}
	return p, nil
}

// SetCAMPolicy makes secretID's calls subject to p; nil removes the
// restriction. Denied calls answer UnauthorizedOperation.
func (e *Emulator) SetCAMPolicy(secretID string, p *CAMPolicy) {
	for {
		old := e.policies.Load()
		next := map[string]*CAMPolicy{}
		if old != nil {
			next = maps.Clone(*old)
		}
		if p == nil {
			delete(next, secretID)
		} else {
			next[secretID] = p
		}
		if e.policies.CompareAndSwap(old, &next) {
			return
		}
	}
}

// SetPolicy restricts secretID to the listed actions on every resource, a
// one-statement CAM policy. Entries may be bare action names
// ("CreateListener", "AllocateAddresses": the service is the one that
// has the action), CAM names ("clb:CreateListener") or patterns
// ("clb:Describe*", "*"). A nil list removes the restriction; an empty,
// non-nil list denies everything.
func (e *Emulator) SetPolicy(secretID string, actions []string) {
	if actions == nil {
		e.SetCAMPolicy(secretID, nil)
		return
	}
	p := &CAMPolicy{Version: "2.0"}
	if len(actions) > 0 {
		s := CAMStatement{Effect: "allow", Resource: CAMList{"*"}}
		for _, a := range actions {
			if a != "*" && !strings.Contains(a, ":") {
				a = serviceOfAction(a) + ":" + a
			}
			s.Action = append(s.Action, a)
		}
		p.Statement = []CAMStatement{s}
	}
	e.SetCAMPolicy(secretID, p)
}

// Policies returns the policies in force, by SecretId.
func (e *Emulator) Policies() map[string]*CAMPolicy {
	out := map[string]*CAMPolicy{}
	if p := e.policies.Load(); p != nil {
		maps.Copy(out, *p)
	}
	return out
}

// authorize returns "" when secretID may call action with this request
// body, or else the CAM resource it may not act on.
func (e *Emulator) authorize(secretID, region, service, action string, body []byte) (denied string) {
	p := e.policies.Load()
	if p == nil {
		return ""
	}
	pol := (*p)[secretID]
	if pol == nil {
		return ""
	}
	return pol.deniedResource(region, service, action, body)
}

// deniedResource evaluates the policy the way CAM does: an explicit deny
// wins, and each resource the call acts on needs an allow. A clb call names
// its load balancers by LoadBalancerId or LoadBalancerIds; one that names
// none (CreateLoadBalancer, DescribeQuota, a DescribeLoadBalancers without
// ids) acts on "clb/*", which only a statement for every load balancer
// covers. vpc calls are resolved by vpcCAMResources, tag calls act on the
// resources they tag.
func (p *CAMPolicy) deniedResource(region, service, action string, body []byte) string {
	var resources []string
	switch service {
	case vpcServiceName:
		resources = vpcCAMResources(region, action, body)
	case tagServiceName:
		resources = tagCAMResources(body)
	case camServiceName:
		resources = []string{"qcs::cam::uin/" + EmulatedUIN + ":uin/" + EmulatedUIN}
	default:
		prefix := "qcs::clb:" + region + ":uin/" + EmulatedUIN + ":clb/"
		var ids struct {
			LoadBalancerId  *string
			LoadBalancerIds []*string
		}
		_ = json.Unmarshal(body, &ids) // a malformed body is the handler's error to report
		for _, id := range append(ids.LoadBalancerIds, ids.LoadBalancerId) {
			if id != nil && *id != "" {
				resources = append(resources, prefix+*id)
			}
		}
		if len(resources) == 0 {
			resources = []string{prefix + "*"}
		}
	}
	for _, r := range resources {
		allowed := false
		for _, s := range p.Statement {
			if !s.matches(service, action, r) {
				continue
			}
			if strings.EqualFold(s.Effect, "deny") {
				return r
			}
			allowed = true
		}
		if !allowed {
			return r
		}
	}
	return ""
}

func (s CAMStatement) matches(service, action, resource string) bool {
	actionOK := false
	for _, a := range s.Action {
		if a == "*" {
			actionOK = true
			break
		}
		svc, name, _ := strings.Cut(a, ":")
		if glob(strings.TrimPrefix(svc, "name/"), service) && glob(name, action) {
			actionOK = true
			break
		}
	}
	if !actionOK {
		return false
	}
	for _, r := range s.Resource {
		if r == "*" || resourceMatch(r, resource) {
			return true
		}
	}
	return false
}

// resourceMatch matches a six-part CAM resource pattern; an empty project,
// region or account part means any.
func resourceMatch(pattern, resource string) bool {
	pp, rp := strings.Split(pattern, ":"), strings.Split(resource, ":")
	if len(pp) != 6 || len(rp) != 6 {
		return false
	}
	for i := range pp {
		if pp[i] == "" && (i == 1 || i == 3 || i == 4) {
			continue
		}
		if !glob(pp[i], rp[i]) {
			return false
		}
	}
	return true
}

// glob matches s against pattern, where "*" matches any run of bytes
// (slashes included, unlike path.Match). It backtracks to the last star
// only, so it takes O(len(pattern)·len(s)) whatever the pattern.
func glob(pattern, s string) bool {
	p, i, star, mark := 0, 0, -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p, mark = star+1, mark+1
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
