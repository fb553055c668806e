package emul

// statUIDOffset is where st_uid lies in the generic struct stat that arm64
// uses (st_gid follows): st_dev, st_ino (8 bytes each), st_mode, st_nlink
// (4 each).
const statUIDOffset = 24
