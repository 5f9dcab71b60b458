//go:build !linux

package testenv

import "syscall"

func dieWithParent() *syscall.SysProcAttr { return nil }
