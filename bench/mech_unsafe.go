package bench

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

func notifyRecv(fd int, req *seccompNotif) error {
	*req = seccompNotif{}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(req)))
	if e != 0 {
		return e
	}
	return nil
}

func notifySend(fd int, resp *seccompNotifResp) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(resp)))
	if e != 0 {
		return e
	}
	return nil
}

func notifySetFlags(fd int, flags uint64) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), seccompIoctlNotifSetFlags, uintptr(flags))
	if e != 0 {
		return e
	}
	return nil
}
