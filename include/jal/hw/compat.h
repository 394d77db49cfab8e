/* Fixed-width types and compile-time checks usable from C, C++, the firmware and the
 * Linux kernel (where <linux/types.h> provides the fixed-width types). */
#ifndef JAL_HW_COMPAT_H
#define JAL_HW_COMPAT_H

#if defined(__KERNEL__)
#include <linux/build_bug.h>
#include <linux/types.h>
#define JAL_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
#define JAL_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define JAL_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
#endif

#define JAL_ASSERT_SIZE(type, size) \
    JAL_STATIC_ASSERT(sizeof(type) == (size), "size of " #type " is part of the ABI")
#define JAL_ASSERT_OFFSET(type, field, off)           \
    JAL_STATIC_ASSERT(offsetof(type, field) == (off), \
                      "offset of " #type "." #field " is part of the ABI")

#endif
