package node

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
)

// sysctls the node's components change: the kubelet sets the kernel's
// overcommit, panic and key limits it expects, and the CNI bridge turns on
// forwarding in both families (IPv6's "all" sets "default" and every
// device with it). Their values are saved before the node starts and put back
// when it stops.
func sysctls() []string {
	return []string{
		"vm/overcommit_memory",
		"kernel/panic",
		"kernel/panic_on_oops",
		"kernel/keys/root_maxkeys",
		"kernel/keys/root_maxbytes",
		"net/ipv4/ip_forward",
		"net/ipv6/conf/all/forwarding",
		"net/ipv6/conf/default/forwarding",
	}
}

const sysctlFile = "sysctl.before"

func snapshotSysctls(dir string) error {
	var b strings.Builder
	for _, k := range sysctls() {
		v, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			continue // not on this kernel
		}
		b.WriteString(k + "=" + strings.TrimSpace(string(v)) + "\n")
	}
	return os.WriteFile(filepath.Join(dir, sysctlFile), []byte(b.String()), 0o600)
}

func restoreSysctls(dir string) error {
	f, err := os.Open(filepath.Join(dir, sysctlFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	var errs []error
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		p := filepath.Join("/proc/sys", k)
		if cur, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(cur)) == v {
			continue
		}
		errs = append(errs, os.WriteFile(p, []byte(v), 0o644))
	}
	return errors.Join(errs...)
}
