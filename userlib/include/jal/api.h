/* JAL_API: marks what libjal exports. libjal is built with -fvisibility=hidden
 * -fvisibility-inlines-hidden and a version script (userlib/libjal.map), so a declaration
 * in include/jal without JAL_API stays inside the library (docs/userlib.md, "What libjal
 * exports"). */
#ifndef JAL_API_H
#define JAL_API_H

#if defined(__GNUC__)
#define JAL_API __attribute__((visibility("default")))
/* For libjal's own classes nested in an exported one (ChipFunction::Impl), which would
 * otherwise take the enclosing class's visibility. */
#define JAL_HIDDEN __attribute__((visibility("hidden")))
#else
#define JAL_API
#define JAL_HIDDEN
#endif

#endif /* JAL_API_H */
