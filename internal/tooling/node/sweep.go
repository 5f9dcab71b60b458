package node

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Sweep removes what a node using dir made, whether it stopped cleanly or
// was killed: its containers, the processes started with dir in their
// command line (containerd, its shims, the Kubernetes components), the
// network namespaces of its Pods, every mount under dir, the iptables
// rules and sysctls changed since it started, its devices and routes, CNI's
// cache of its network, and dir itself. It touches nothing else.
func Sweep(dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return tearDownNetwork()
	}
	var errs []error
	errs = append(errs, killContainers(filepath.Join(dir, "runc")))
	errs = append(errs, killProcesses(dir))
	errs = append(errs, removePodNetns())
	errs = append(errs, unmountUnder(dir))
	errs = append(errs, restoreRules(dir))
	errs = append(errs, restoreSysctls(dir))
	errs = append(errs, tearDownNetwork())
	errs = append(errs, removeCNICache())
	if err := errors.Join(errs...); err != nil {
		return err // keep dir: its snapshots are needed to try again
	}
	return os.RemoveAll(dir)
}

// killContainers kills and deletes every container runc knows under root
// (one folder per containerd namespace).
func killContainers(root string) error {
	nss, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, ns := range nss {
		r := filepath.Join(root, ns.Name())
		out, err := exec.Command("runc", "--root", r, "list", "--format", "json").Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("runc list in %s: %w", r, err))
			continue
		}
		var cs []struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(out, &cs)
		for _, c := range cs {
			if out, err := exec.Command("runc", "--root", r, "delete", "--force", c.ID).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("runc delete %s: %w: %s", c.ID, err, out))
			}
		}
	}
	return errors.Join(errs...)
}

// killProcesses kills the processes whose command line names dir, and
// waits for them to go.
func killProcesses(dir string) error {
	find := func() []int {
		var pids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
			if err == nil && strings.Contains(string(cmd), dir+"/") {
				pids = append(pids, pid)
			}
		}
		return pids
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		pids := find()
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of %s still running: %v", dir, pids)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// removePodNetns deletes the network namespaces CNI made for the node's
// Pods: the cni-* ones holding an address of the node's Pod subnet.
func removePodNetns() error {
	entries, err := os.ReadDir("/run/netns")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "cni-") || !netnsInSubnet(e.Name()) {
			continue
		}
		errs = append(errs, ip("netns", "delete", e.Name()))
	}
	return errors.Join(errs...)
}

func netnsInSubnet(name string) bool {
	out, err := exec.Command("ip", "-n", name, "-j", "addr", "show").Output()
	if err != nil {
		return false
	}
	var links []struct {
		Addrs []struct {
			Local string `json:"local"`
		} `json:"addr_info"`
	}
	_ = json.Unmarshal(out, &links)
	for _, l := range links {
		for _, a := range l.Addrs {
			if addr, err := netip.ParseAddr(a.Local); err == nil && NodePodCIDR().Contains(addr) {
				return true
			}
		}
	}
	return false
}

// mountsUnder lists the mount points at or under dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var ms []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			ms = append(ms, mp)
		}
	}
	slices.SortFunc(ms, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return slices.Compact(ms), sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unmountUnder(dir string) error {
	ms, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range ms {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// removeCNICache removes libcni's cached results for the node's network
// (containerd keeps them in CNI's default folder).
func removeCNICache() error {
	matches, _ := filepath.Glob("/var/lib/cni/results/ptn-*")
	var errs []error
	for _, m := range matches {
		errs = append(errs, os.Remove(m))
	}
	return errors.Join(errs...)
}
