package sysvipc

// semidDsLayout is struct semid64_ds on arm64 (asm-generic/sembuf.h, 64-bit).
var semidDsLayout = struct{ otime, ctime, nsems, size int }{48, 56, 64, 88}
