package runlock

import (
	"os"
	"os/signal"
	"syscall"
	"unsafe"
)

// ForegroundTerminal reports whether f is a terminal whose foreground
// process group is this process's. Then the command, which runs in a process
// group of its own, must be given the terminal: otherwise its first read
// stops it with SIGTTIN (and a stopped command holds the lock for ever).
func ForegroundTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	pgrp, err := tcgetpgrp(int(f.Fd()))
	return err == nil && pgrp == syscall.Getpgrp()
}

func tcgetpgrp(fd int) (int, error) {
	var pgrp int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), uintptr(syscall.TIOCGPGRP), uintptr(unsafe.Pointer(&pgrp))); errno != 0 {
		return 0, errno
	}
	return int(pgrp), nil
}

// takeTerminalBack makes this process's group the terminal's foreground
// group again once the command has exited. A background group that does this
// gets SIGTTOU unless it ignores it, so it is ignored for the call.
func takeTerminalBack(f *os.File) error {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	pgrp := int32(syscall.Getpgrp())
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(syscall.TIOCSPGRP), uintptr(unsafe.Pointer(&pgrp))); errno != 0 {
		return errno
	}
	return nil
}
