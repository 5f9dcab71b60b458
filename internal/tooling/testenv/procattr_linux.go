package testenv

import "syscall"

// dieWithParent makes the kernel kill a child when the test or command
// that started it dies, even by SIGKILL, so no server outlives its run.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
