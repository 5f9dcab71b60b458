package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary plays the pause binary when asked through the
// environment: it runs notify and run as main does, and says on stdout
// when its handlers are in place.
const modeEnv = "PAUSE_TEST_MODE"

func TestMain(m *testing.M) {
	switch os.Getenv(modeEnv) {
	case "pause":
		sigs := notify()
		fmt.Println("ready")
		run(sigs)
		os.Exit(0)
	case "spawn":
		sigs := notify()
		// A child that exits at once, left to pause to reap.
		p, err := os.StartProcess(os.Args[0], []string{os.Args[0]}, &os.ProcAttr{Env: withMode("exit")})
		if err != nil {
			fmt.Println("spawn:", err)
			os.Exit(3)
		}
		fmt.Println(p.Pid)
		run(sigs)
		os.Exit(0)
	case "exit":
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// withMode is the environment with modeEnv set to mode and to nothing else
// (a second entry would not override the first).
func withMode(mode string) []string {
	env := []string{modeEnv + "=" + mode}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, modeEnv+"=") {
			env = append(env, e)
		}
	}
	return env
}

func start(t *testing.T, mode string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0]) //nolint:gosec // the test binary itself
	cmd.Env = withMode(mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewReader(out)
}

func TestExitsZeroOnSignal(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd, out := start(t, "pause")
			if l, err := out.ReadString('\n'); l != "ready\n" {
				t.Fatalf("pause said %q, %v", l, err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("pause after %s: %v, want exit 0", sig, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("pause still running 10s after %s", sig)
			}
		})
	}
}

// TestReapsChildren: a child of pause that exits is reaped, not left a
// zombie, and pause keeps running until told to stop.
func TestReapsChildren(t *testing.T) {
	cmd, out := start(t, "spawn")
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the child's pid: %v", err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("child pid %q: %v", line, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", child))
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
			t.Fatalf("child %d not reaped: %s", child, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if cmd.ProcessState != nil {
		t.Fatal("pause exited after reaping its child")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("pause after SIGTERM: %v", err)
	}
}
