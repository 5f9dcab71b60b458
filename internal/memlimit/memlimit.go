// Package memlimit picks the Go runtime's soft memory limit of the
// provider. Without one the heap may grow to twice what is live (GOGC=100)
// before a collection: at 10k Pods that is most of the RSS. With a limit
// near the container's, the runtime collects (and returns memory to the
// system) sooner as the limit nears, instead of the container being
// killed for memory.
package memlimit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Fraction of the container's memory limit taken by default: the rest is
// what the Go runtime does not count (binary, stacks' overhead, C memory).
const Fraction = 0.9

// Auto is the --memory-limit value that picks the limit from the
// environment: GOMEMLIMIT when set, else Fraction of the cgroup's limit,
// else none.
const Auto = "auto"

// Parse reads a --memory-limit value: Auto, "none" (no limit), or a
// quantity such as 512Mi. It returns the bytes for a quantity.
func Parse(v string) (int64, error) {
	switch v {
	case Auto, "none":
		return 0, nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return 0, fmt.Errorf("--memory-limit must be %s, none or a quantity such as 512Mi: %w", Auto, err)
	}
	if q.Sign() <= 0 {
		return 0, fmt.Errorf("--memory-limit must be positive, got %s", v)
	}
	return q.Value(), nil
}

// Choose returns the limit for a --memory-limit value and where it comes
// from, or 0 for none. gomemlimit is $GOMEMLIMIT (the runtime applied it
// already); cgroupDir is where the process's cgroup files are
// (/sys/fs/cgroup in a container).
func Choose(v, gomemlimit, cgroupDir string) (int64, string, error) {
	switch v {
	case "none":
		return 0, "none", nil
	case Auto:
	default:
		n, err := Parse(v)
		return n, "--memory-limit", err
	}
	if gomemlimit != "" {
		return 0, "GOMEMLIMIT", nil // the runtime's own; left as it is
	}
	max, err := CgroupMax(cgroupDir)
	if err != nil || max <= 0 {
		return 0, "none (no cgroup memory limit)", err
	}
	return int64(float64(max) * Fraction), fmt.Sprintf("%.0f %% of the cgroup's memory limit %d", Fraction*100, max), nil
}

// CgroupMax reads the memory limit of the cgroup at dir: memory.max
// (cgroup v2) or memory/memory.limit_in_bytes (v1). It returns 0 when
// there is none ("max", or v1's near-2^63 "unlimited").
func CgroupMax(dir string) (int64, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "memory.max")) //nolint:gosec // G304: a fixed cgroup path.
	if os.IsNotExist(err) {
		raw, err = os.ReadFile(filepath.Join(dir, "memory", "memory.limit_in_bytes")) //nolint:gosec // G304: idem.
	}
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return parseMax(string(raw))
}

// unlimitedV1 is above any real limit: cgroup v1 writes its "unlimited"
// as the largest page multiple below 2^63.
const unlimitedV1 = 1 << 62

func parseMax(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "max" || s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cannot read the cgroup memory limit %q: %w", s, err)
	}
	if n >= unlimitedV1 {
		return 0, nil
	}
	return n, nil
}
