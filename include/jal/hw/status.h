/* Status codes shared by the device, firmware, driver and userlib.
 * Stable 32-bit values from an extend-only list: never renumber, never reuse. Admin
 * completions, user-queue signals and host library calls all report these. */
#ifndef JAL_HW_STATUS_H
#define JAL_HW_STATUS_H

#include "compat.h"

enum jal_status {
    JAL_STATUS_OK = 0,
    JAL_STATUS_INVALID_OPCODE = 1,    /* command or packet kind not known */
    JAL_STATUS_INVALID_FIELD = 2,     /* a field holds a value outside its documented range */
    JAL_STATUS_INVALID_LENGTH = 3,    /* a data length is too small, too large or misaligned */
    JAL_STATUS_DMA_FAULT = 4,         /* host memory named by the command is not mapped */
    JAL_STATUS_BUSY = 5,              /* resource in use; retry later */
    JAL_STATUS_NOT_READY = 6,         /* device not booted, or queue not enabled */
    JAL_STATUS_INTERNAL = 7,          /* device-side bug; see the event log */
    JAL_STATUS_OUT_OF_RANGE = 8,      /* an index or address beyond what exists */
    JAL_STATUS_UNSUPPORTED = 9,       /* valid request this device does not implement */
    JAL_STATUS_ABORTED = 10,          /* cancelled by reset or queue teardown */
    JAL_STATUS_TIMEOUT = 11,          /* no answer within the allowed time */
    JAL_STATUS_NO_DEVICE = 12,        /* host side: no such device, or it went away */
    JAL_STATUS_IO_ERROR = 13,         /* host side: transport failed */
    JAL_STATUS_PROTOCOL = 14,         /* malformed transport message */
    JAL_STATUS_PERMISSION = 15,       /* access outside the caller's context */
    JAL_STATUS_NO_MEMORY = 16,        /* allocation failed */
    JAL_STATUS_HW_FAILED = 17,        /* the chip failed boot or a unit is disabled */
    JAL_STATUS_VERSION_MISMATCH = 18, /* interface major versions differ */
    JAL_STATUS_PAGE_FAULT = 19,       /* device virtual address not mapped in the context */
    JAL_STATUS_DEADLOCK = 20,         /* a kernel's slices wait for each other forever */
    JAL_STATUS_THERMAL_TRIP = 21,     /* the die passed its critical temperature: compute is off */
    JAL_STATUS_DEVICE_RESET = 22,     /* host side: the device was reset since this handle was
                                       * made; everything it named is gone (close, re-open) */
    JAL_STATUS_IMAGE_REJECTED = 23,   /* a firmware image failed verification (since 1.6) */
    JAL_STATUS_ECC_UNCORRECTED = 24,  /* device memory read an uncorrectable ECC error: the data
                                       * is lost, the page retired (since 1.7) */
    JAL_STATUS_LINK_DOWN = 25,        /* a peer chip's memory could not be reached: no link up to
                                       * it, or its process left or died (since 1.8) */
    JAL_STATUS_COUNT_
};

static inline const char* jal_status_name(uint32_t s)
{
    switch (s) {
    case JAL_STATUS_OK:
        return "ok";
    case JAL_STATUS_INVALID_OPCODE:
        return "invalid opcode";
    case JAL_STATUS_INVALID_FIELD:
        return "invalid field";
    case JAL_STATUS_INVALID_LENGTH:
        return "invalid length";
    case JAL_STATUS_DMA_FAULT:
        return "DMA fault";
    case JAL_STATUS_BUSY:
        return "busy";
    case JAL_STATUS_NOT_READY:
        return "not ready";
    case JAL_STATUS_INTERNAL:
        return "internal error";
    case JAL_STATUS_OUT_OF_RANGE:
        return "out of range";
    case JAL_STATUS_UNSUPPORTED:
        return "unsupported";
    case JAL_STATUS_ABORTED:
        return "aborted";
    case JAL_STATUS_TIMEOUT:
        return "timeout";
    case JAL_STATUS_NO_DEVICE:
        return "no device";
    case JAL_STATUS_IO_ERROR:
        return "I/O error";
    case JAL_STATUS_PROTOCOL:
        return "protocol error";
    case JAL_STATUS_PERMISSION:
        return "permission denied";
    case JAL_STATUS_NO_MEMORY:
        return "out of memory";
    case JAL_STATUS_HW_FAILED:
        return "hardware failed";
    case JAL_STATUS_VERSION_MISMATCH:
        return "version mismatch";
    case JAL_STATUS_THERMAL_TRIP:
        return "thermal trip";
    case JAL_STATUS_DEADLOCK:
        return "deadlock";
    case JAL_STATUS_PAGE_FAULT:
        return "page fault";
    case JAL_STATUS_DEVICE_RESET:
        return "device reset";
    case JAL_STATUS_IMAGE_REJECTED:
        return "image rejected";
    case JAL_STATUS_ECC_UNCORRECTED:
        return "uncorrectable ECC error";
    case JAL_STATUS_LINK_DOWN:
        return "link down";
    default:
        return "unknown status";
    }
}

#endif
