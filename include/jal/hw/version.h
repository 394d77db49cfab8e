/* Version of the device interface defined by the headers in this folder.
 * A major bump breaks compatibility (layouts or meanings changed); a minor bump only adds
 * (new registers, opcodes, fields carved out of reserved space). Firmware reports the
 * version it implements in JAL_REG_VERSION; hosts refuse a different major. */
#ifndef JAL_HW_VERSION_H
#define JAL_HW_VERSION_H

#define JAL_HW_VERSION_MAJOR 1
#define JAL_HW_VERSION_MINOR 11
#define JAL_HW_VERSION ((JAL_HW_VERSION_MAJOR << 16) | JAL_HW_VERSION_MINOR)

#define JAL_HW_VERSION_GET_MAJOR(v) (((v) >> 16) & 0xffffu)
#define JAL_HW_VERSION_GET_MINOR(v) ((v)&0xffffu)

#endif
