package memlimit

import (
	"os"
	"path/filepath"
	"testing"
)

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCgroupMax(t *testing.T) {
	for name, c := range map[string]struct {
		file, content string
		want          int64
		err           bool
	}{
		"v2 limit":     {file: "memory.max", content: "268435456\n", want: 256 << 20},
		"v2 no limit":  {file: "memory.max", content: "max\n"},
		"v1 limit":     {file: "memory/memory.limit_in_bytes", content: "536870912\n", want: 512 << 20},
		"v1 unlimited": {file: "memory/memory.limit_in_bytes", content: "9223372036854771712\n"},
		"no cgroup":    {},
		"garbage":      {file: "memory.max", content: "lots\n", err: true},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if c.file != "" {
				write(t, dir, c.file, c.content)
			}
			got, err := CgroupMax(dir)
			if (err != nil) != c.err || got != c.want {
				t.Fatalf("CgroupMax = %d, %v; want %d, error %v", got, err, c.want, c.err)
			}
		})
	}
}

func TestChoose(t *testing.T) {
	limited := t.TempDir()
	write(t, limited, "memory.max", "209715200\n")
	for name, c := range map[string]struct {
		flag, env, dir string
		want           int64
		err            bool
	}{
		"90 % of the cgroup's":  {flag: Auto, dir: limited, want: 188743680},
		"no cgroup limit: none": {flag: Auto, dir: t.TempDir()},
		"GOMEMLIMIT first":      {flag: Auto, env: "100MiB", dir: limited},
		"a quantity wins":       {flag: "300Mi", env: "100MiB", dir: limited, want: 300 << 20},
		"none wins":             {flag: "none", dir: limited},
		"not a quantity":        {flag: "lots", dir: limited, err: true},
		"a negative quantity":   {flag: "-1Mi", dir: limited, err: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, _, err := Choose(c.flag, c.env, c.dir)
			if (err != nil) != c.err || got != c.want {
				t.Fatalf("Choose = %d, %v; want %d, error %v", got, err, c.want, c.err)
			}
		})
	}
}
