package emul

// statUIDOff is st_uid's offset in arm64's (the generic) struct stat.
const statUIDOff = 24
