package node

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// HostState is what a node changes on the machine, read so that a test
// can compare the machine before a node started with after it stopped.
type HostState struct {
	Links     []string            // device names
	Routes    []string            // `ip route` lines
	Netns     []string            // named network namespaces
	IPTables  map[string][]string // chains and rules per family, no counters
	Sysctls   map[string]string
	Mounts    []string // mount points under the node's folder
	Processes []string // processes with the node's folder in their command line
	CNICache  []string // libcni's cached results of the node's network
}

// ReadHostState reads the machine's state as it concerns a node in dir.
func ReadHostState(dir string) (HostState, error) {
	var s HostState
	var err error
	if s.Links, err = lines("ip", "-o", "link", "show"); err != nil {
		return s, err
	}
	for i, l := range s.Links { // "3: name: <…" → "name"
		if f := strings.Fields(l); len(f) > 1 {
			s.Links[i] = strings.TrimSuffix(strings.Split(f[1], "@")[0], ":")
		}
	}
	if s.Routes, err = lines("ip", "route", "show", "table", "all"); err != nil {
		return s, err
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		s.Netns = append(s.Netns, e.Name())
	}
	s.IPTables = map[string][]string{}
	for _, f := range families() {
		out, err := saveRules(f)
		if err != nil {
			return s, err
		}
		for name, t := range parseRuleset(out) {
			for _, c := range t.chains {
				// Built-in chains come with their table, which the
				// first rule of a fresh machine creates and nothing
				// removes: only their rules count.
				if !t.builtin[c] {
					s.IPTables[f.cmd] = append(s.IPTables[f.cmd], name+" :"+c)
				}
			}
			for _, r := range t.rules {
				s.IPTables[f.cmd] = append(s.IPTables[f.cmd], name+" -A "+r)
			}
		}
		slices.Sort(s.IPTables[f.cmd])
	}
	s.Sysctls = map[string]string{}
	for _, k := range sysctls() {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", k)); err == nil {
			s.Sysctls[k] = strings.TrimSpace(string(v))
		}
	}
	if s.Mounts, err = mountsUnder(dir); err != nil {
		return s, err
	}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil || p.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		if cmd, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline")); err == nil && strings.Contains(string(cmd), dir+"/") {
			s.Processes = append(s.Processes, strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	s.CNICache, _ = filepath.Glob("/var/lib/cni/results/ptn-*")
	return s, nil
}

func lines(name string, args ...string) ([]string, error) {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return nil, err
	}
	ls := strings.Split(strings.TrimSpace(string(out)), "\n")
	slices.Sort(ls)
	return ls, nil
}
