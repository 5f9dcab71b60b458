package bench

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on
// every Linux architecture Go builds for.
const clockTicks = 100

// CPUSeconds is the user plus system CPU time of a process so far.
func CPUSeconds(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(raw))
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a stat line;
// the fields are counted after the command name, which may hold spaces.
func parseStatCPU(stat string) (float64, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("malformed stat")
	}
	f := strings.Fields(stat[end+1:])
	// f[0] is field 3 (state): utime is f[11], stime f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed stat: %d fields", len(f))
	}
	u, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, err
	}
	s, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, err
	}
	return float64(u+s) / clockTicks, nil
}

// RSSBytes is the resident set size of a process.
func RSSBytes(pid int) (int64, error) { return statusBytes(pid, "VmRSS") }

// PeakRSSBytes is the highest resident set size a process had (VmHWM).
func PeakRSSBytes(pid int) (int64, error) { return statusBytes(pid, "VmHWM") }

func statusBytes(pid int, field string) (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseStatus(string(raw), field)
}

func parseVmRSS(status string) (int64, error) { return parseStatus(status, "VmRSS") }

// parseStatus reads a "Field: n kB" line of /proc/<pid>/status.
func parseStatus(status, field string) (int64, error) {
	for line := range strings.SplitSeq(status, "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("malformed %s %q", field, line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s", field)
}

// Machine describes where a run happened.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	Date      string `json:"date"`
	// Note says what else the machine was doing during the run, when it
	// was not idle (cmd/bench -note); the page shows it beside the figures.
	Note string `json:"note,omitempty"`
}

// cpuModel is the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// ThisMachine describes the machine the harness runs on, now.
func ThisMachine() Machine {
	return Machine{CPU: cpuModel(), Cores: runtime.NumCPU(), GoVersion: runtime.Version(),
		OS: runtime.GOOS + "/" + runtime.GOARCH, Date: time.Now().UTC().Format(time.RFC3339)}
}
