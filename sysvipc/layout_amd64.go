package sysvipc

// semidDsLayout is struct semid64_ds on x86_64 (arch/x86/include/uapi/asm/sembuf.h):
// each time is followed by an unused word.
var semidDsLayout = struct{ otime, ctime, nsems, size int }{48, 64, 80, 104}
