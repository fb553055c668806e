package emul

// statUIDOffset is where st_uid lies in x86_64's struct stat (st_gid
// follows): st_dev, st_ino, st_nlink (8 bytes each), st_mode (4).
const statUIDOffset = 28
