// Command pause is the sandbox ("pause") container of a Pod: it holds the
// Pod's namespaces open until the kubelet stops the sandbox. As PID 1 of a
// Pod that shares its process namespace it inherits orphaned processes, so
// it reaps every child that exits; otherwise they would stay zombies.
package main

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
)

func main() { os.Exit(run(notify())) }

// notify returns the signals pause acts on. PID 1 gets only the signals it
// has a handler for, so these must be caught explicitly; SIGCHLD says a
// child is waiting to be reaped.
func notify() <-chan os.Signal {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	return sigs
}

// run reaps children until SIGTERM or SIGINT and returns the exit code.
func run(sigs <-chan os.Signal) int {
	// Children that exited before the handler was installed sent their
	// SIGCHLD too early to be seen.
	reap()
	for s := range sigs {
		if s != syscall.SIGCHLD {
			return 0
		}
		reap()
	}
	return 0
}

// reap waits for every child that has exited, without blocking, and returns
// how many it reaped. Signals coalesce, so one SIGCHLD may stand for many.
func reap() int {
	n := 0
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return n
		}
		n++
	}
}
