package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

const stateFormatVersion = 1

// persisted is the JSON layout of Config.StateFile.
type persisted struct {
	Version       int                     `json:"version"`
	SavedAt       time.Time               `json:"savedAt"`
	LBSeq         uint64                  `json:"lbSeq"`
	LoadBalancers []*lbState              `json:"loadBalancers"`
	Tasks         []*task                 `json:"tasks"`
	TaskAliases   map[string]string       `json:"taskAliases,omitempty"` // retried CreateLoadBalancer RequestId -> task
	Tokens        map[string]*tokenRecord `json:"clientTokens,omitempty"`
	VIPCursor     int                     `json:"vipCursor"`
	VIP6Cursor    int                     `json:"vip6Cursor,omitempty"`
	VPCs          map[string]vpcInfo      `json:"defaultVpcs,omitempty"`
	VPC           *persistedVPC           `json:"vpc,omitempty"`
}

// persistedVPC is the vpc part of the state file: EIPs, ENIs and the
// counters quota, daily limit, idle accounting and task ids depend on.
type persistedVPC struct {
	EIPs         []*eipState          `json:"eips"`
	ENIs         []*eniState          `json:"enis"`
	EIPSeq       uint64               `json:"eipSeq"`
	EIPCursor    int                  `json:"eipCursor"`
	Daily        map[string]int       `json:"dailyAllocated,omitempty"`
	Tokens       map[string]*eipToken `json:"clientTokens,omitempty"`
	TaskSeq      uint64               `json:"taskSeq"`
	ReleasedIdle float64              `json:"releasedIdleSeconds"`
}

func (e *Emulator) markDirty() {
	if e.cfg.StateFile == "" {
		return
	}
	select {
	case e.dirty <- struct{}{}:
	default: // a save is already pending
	}
}

// persistLoop coalesces changes into at most one write per PersistInterval.
func (e *Emulator) persistLoop() {
	defer e.wg.Done()
	for {
		select {
		case <-e.done:
			return
		case <-e.dirty:
		}
		select {
		case <-e.done:
			return // Close saves
		case <-time.After(e.cfg.PersistInterval):
		}
		if err := e.save(); err != nil {
			e.cfg.Logf("emulator: save state: %v", err)
		}
	}
}

// Save writes the state file now (a no-op without Config.StateFile).
func (e *Emulator) Save() error {
	if e.cfg.StateFile == "" {
		return nil
	}
	return e.save()
}

func (e *Emulator) save() error {
	e.mu.RLock()
	p := persisted{
		Version: stateFormatVersion, SavedAt: e.cfg.Clock(), LBSeq: e.st.lbSeq,
		Tokens: e.st.tokens, VIPCursor: e.st.vipCursor, VIP6Cursor: e.st.vip6Cursor, VPCs: e.st.vpcs, TaskAliases: map[string]string{},
	}
	for _, lb := range e.st.lbs {
		p.LoadBalancers = append(p.LoadBalancers, lb)
	}
	vs := &e.st.vpc
	p.VPC = &persistedVPC{EIPSeq: vs.eipSeq, EIPCursor: vs.eipCursor, Daily: vs.daily, Tokens: vs.tokens,
		TaskSeq: vs.taskSeq, ReleasedIdle: vs.releasedIdle, EIPs: []*eipState{}, ENIs: []*eniState{}}
	for _, a := range vs.eips {
		p.VPC.EIPs = append(p.VPC.EIPs, a)
	}
	slices.SortFunc(p.VPC.EIPs, func(a, b *eipState) int { return int(a.Seq) - int(b.Seq) })
	for _, n := range vs.enis {
		p.VPC.ENIs = append(p.VPC.ENIs, n)
	}
	slices.SortFunc(p.VPC.ENIs, func(a, b *eniState) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(p.LoadBalancers, func(a, b *lbState) int { return int(a.Seq) - int(b.Seq) })
	for _, id := range e.st.taskOrder {
		t, ok := e.st.tasks[id]
		switch {
		case !ok:
		case t.ID == id:
			p.Tasks = append(p.Tasks, t)
		default:
			p.TaskAliases[id] = t.ID
		}
	}
	b, err := json.MarshalIndent(p, "", "  ")
	e.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("emulator: encode state: %w", err)
	}
	// Write then rename, so a crash never leaves a truncated state file.
	dir := filepath.Dir(e.cfg.StateFile)
	tmp, err := os.CreateTemp(dir, ".emulator-state-*")
	if err != nil {
		return fmt.Errorf("emulator: save state: %w", err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("emulator: save state: %w", err)
	}
	if err := os.Rename(tmp.Name(), e.cfg.StateFile); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("emulator: save state: %w", err)
	}
	return nil
}

// load restores Config.StateFile. Tasks that were running when it was
// written are treated as completed: their changes were already applied.
func (e *Emulator) load() error {
	b, err := os.ReadFile(e.cfg.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("emulator: load state: %w", err)
	}
	var p persisted
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("emulator: load state %s: %w", e.cfg.StateFile, err)
	}
	if p.Version != stateFormatVersion {
		return fmt.Errorf("emulator: load state %s: unsupported version %d", e.cfg.StateFile, p.Version)
	}
	st := newStore()
	st.lbSeq, st.vipCursor, st.vip6Cursor = p.LBSeq, p.VIPCursor, p.VIP6Cursor
	if p.VPCs != nil {
		st.vpcs = p.VPCs
	}
	if p.Tokens != nil {
		st.tokens = p.Tokens
	}
	for _, lb := range p.LoadBalancers {
		if lb == nil || lb.ID == "" {
			continue
		}
		if lb.Status == 0 {
			lb.Status, lb.StatusTime = 1, p.SavedAt
		}
		st.lbs[lb.ID] = lb
		st.vips[lb.VIP] = lb.ID
		st.usedIDs[lb.ID] = struct{}{}
		for _, l := range lb.Listeners {
			st.usedIDs[l.ID] = struct{}{}
			if l.HealthLocationID != "" {
				st.usedIDs[l.HealthLocationID] = struct{}{}
			}
			for _, r := range l.Rules {
				st.usedIDs[r.ID] = struct{}{}
			}
		}
	}
	for _, v := range st.vpcs {
		st.usedIDs[v.ID] = struct{}{}
	}
	for _, t := range p.Tasks {
		if t == nil || t.ID == "" {
			continue
		}
		if t.Status == taskRunning {
			t.Status = taskSucceeded
		}
		t.settled = true
		st.tasks[t.ID] = t
		st.taskOrder = append(st.taskOrder, t.ID)
		if t.DealName != "" {
			st.deals[t.DealName] = t.ID
		}
	}
	for alias, id := range p.TaskAliases {
		if t, ok := st.tasks[id]; ok && !strings.EqualFold(alias, id) {
			st.tasks[alias] = t
			st.taskOrder = append(st.taskOrder, alias)
		}
	}
	if v := p.VPC; v != nil {
		vs := &st.vpc
		vs.eipSeq, vs.eipCursor, vs.releasedIdle = v.EIPSeq, v.EIPCursor, v.ReleasedIdle
		vs.taskSeq = max(v.TaskSeq, firstVPCTaskID)
		if v.Daily != nil {
			vs.daily = v.Daily
		}
		if v.Tokens != nil {
			vs.tokens = v.Tokens
		}
		for _, a := range v.EIPs {
			if a == nil || a.ID == "" {
				continue
			}
			vs.eips[a.ID] = a
			vs.eipIPs[a.IP] = a.ID
			st.usedIDs[a.ID] = struct{}{}
		}
		for _, n := range v.ENIs {
			if n == nil || n.ID == "" {
				continue
			}
			vs.enis[n.ID] = n
			st.usedIDs[n.ID] = struct{}{}
			for _, x := range n.IPs {
				vs.eniByIP[x.IP] = n.ID
			}
		}
	}
	e.st = st
	e.settleLoadedEIPs(p.SavedAt)
	return nil
}
