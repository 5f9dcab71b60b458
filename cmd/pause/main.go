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

// main returns, and so exits 0, once told to stop.
func main() { run(notify()) }

// notify returns the signals pause acts on. PID 1 gets only the signals it
// has a handler for, so these must be caught explicitly; SIGCHLD says a
// child is waiting to be reaped.
func notify() <-chan os.Signal {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	return sigs
}

// run reaps children until SIGTERM or SIGINT.
func run(sigs <-chan os.Signal) {
	// Children that exited before the handler was installed sent their
	// SIGCHLD too early to be seen.
	reap()
	for s := range sigs {
		if s != syscall.SIGCHLD {
			return
		}
		reap()
	}
}

// reap waits for every child that has exited, without blocking. Signals
// coalesce, so one SIGCHLD may stand for many children.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
	}
}
