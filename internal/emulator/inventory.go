package emulator

import (
	"slices"
	"strings"
)

// Inventory is a snapshot of the emulated cloud, for leak checks and
// assertions in tests.
type Inventory struct {
	LoadBalancers []InventoryLoadBalancer `json:"LoadBalancers"`
	// RunningTasks counts asynchronous tasks still in progress (clb and vpc).
	RunningTasks int `json:"RunningTasks"`
	// EIPs and ENIs of every region, ordered by id.
	EIPs []InventoryEIP `json:"EIPs"`
	ENIs []InventoryENI `json:"ENIs"`
}

// InventoryLoadBalancer is one load balancer with everything under it.
type InventoryLoadBalancer struct {
	ID        string              `json:"LoadBalancerId"`
	Name      string              `json:"LoadBalancerName"`
	Type      string              `json:"LoadBalancerType"`
	Region    string              `json:"Region"`
	VIP       string              `json:"Vip"`
	Domain    string              `json:"LoadBalancerDomain,omitempty"`
	VpcID     string              `json:"VpcId"`
	Status    int                 `json:"Status"` // 0 creating, 1 normal
	Busy      bool                `json:"Busy"`   // a task is running
	Deleting  bool                `json:"Deleting,omitempty"`
	Tags      map[string]string   `json:"Tags,omitempty"`
	Listeners []InventoryListener `json:"Listeners"`
}

// InventoryListener is one listener with its rules and targets.
type InventoryListener struct {
	ID       string `json:"ListenerId"`
	Name     string `json:"ListenerName"`
	Protocol string `json:"Protocol"`
	Port     int    `json:"Port"`
	EndPort  int    `json:"EndPort,omitempty"`
	// CertID is the server certificate of a TCP_SSL, QUIC or HTTPS
	// listener.
	CertID  string            `json:"CertId,omitempty"`
	Targets []InventoryTarget `json:"Targets,omitempty"` // L4 listeners
	Rules   []InventoryRule   `json:"Rules,omitempty"`   // HTTP/HTTPS listeners
}

// InventoryRule is one L7 forwarding rule.
type InventoryRule struct {
	ID      string            `json:"LocationId"`
	Domain  string            `json:"Domain"`
	URL     string            `json:"Url"`
	Targets []InventoryTarget `json:"Targets,omitempty"`
}

// InventoryTarget is one bound backend.
type InventoryTarget struct {
	InstanceID string `json:"InstanceId,omitempty"`
	IP         string `json:"Ip"`
	Port       int    `json:"Port"`
	Weight     int    `json:"Weight"`
}

// Inventory returns every load balancer of every region, ordered by id,
// including those whose deletion task is still running (Deleting).
func (e *Emulator) Inventory() Inventory {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var inv Inventory
	add := func(lb *lbState, deleting bool) {
		il := InventoryLoadBalancer{
			ID: lb.ID, Name: lb.Name, Type: lb.Type, Region: lb.Region, VIP: lb.VIP, Domain: lb.Domain,
			VpcID: lb.VpcID, Status: int(lb.Status), Busy: lb.isBusy(), Deleting: deleting,
			Listeners: []InventoryListener{},
		}
		if len(lb.Tags) > 0 {
			il.Tags = map[string]string{}
			for _, t := range lb.Tags {
				il.Tags[t.Key] = t.Value
			}
		}
		for _, l := range lb.Listeners {
			out := InventoryListener{ID: l.ID, Name: l.Name, Protocol: l.Protocol, Port: int(l.Port),
				EndPort: int(l.EndPort), Targets: inventoryTargets(l.Targets)}
			if l.Certificate != nil && l.Certificate.CertId != nil {
				out.CertID = *l.Certificate.CertId
			}
			for _, r := range l.Rules {
				out.Rules = append(out.Rules, InventoryRule{ID: r.ID, Domain: r.Domain, URL: r.URL,
					Targets: inventoryTargets(r.Targets)})
			}
			il.Listeners = append(il.Listeners, out)
		}
		inv.LoadBalancers = append(inv.LoadBalancers, il)
	}
	for _, lb := range e.st.lbs {
		add(lb, false)
	}
	for _, lb := range e.st.dying {
		add(lb, true)
	}
	slices.SortFunc(inv.LoadBalancers, func(a, b InventoryLoadBalancer) int { return strings.Compare(a.ID, b.ID) })
	e.vpcInventory(&inv)
	seen := map[*task]bool{}
	for _, t := range e.st.tasks {
		if t.Status == taskRunning && !seen[t] {
			seen[t] = true
			inv.RunningTasks++
		}
	}
	return inv
}

func inventoryTargets(ts []*targetState) []InventoryTarget {
	var out []InventoryTarget
	for _, t := range ts {
		out = append(out, InventoryTarget{InstanceID: t.InstanceID, IP: t.IP, Port: int(t.Port), Weight: int(t.Weight)})
	}
	return out
}

// Listeners counts the listeners of all load balancers, a cheap leak check.
func (inv Inventory) Listeners() int {
	n := 0
	for _, lb := range inv.LoadBalancers {
		n += len(lb.Listeners)
	}
	return n
}

// LoadBalancer returns the load balancer with id, if present.
func (inv Inventory) LoadBalancer(id string) (InventoryLoadBalancer, bool) {
	for _, lb := range inv.LoadBalancers {
		if lb.ID == id {
			return lb, true
		}
	}
	return InventoryLoadBalancer{}, false
}
