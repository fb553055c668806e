package emul

// statUIDOff is st_uid's offset in x86_64's struct stat.
const statUIDOff = 28
