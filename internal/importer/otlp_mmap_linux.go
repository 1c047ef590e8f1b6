package importer

import "syscall"

// mapPopulate has the kernel map every page at once instead of a fault a
// page or so.
const mapPopulate = syscall.MAP_POPULATE
