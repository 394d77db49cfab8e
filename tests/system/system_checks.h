/* What the system test's guest programs share: a failure count, one ok/FAIL line per
 * check, and zeroing a uapi structure with its size set. */
#ifndef JAL_SYSTEM_CHECKS_H
#define JAL_SYSTEM_CHECKS_H

#include <stdio.h>
#include <string.h>

static int failures;

static void expect_true(const char* what, int cond)
{
    printf("%s %s\n", cond ? "ok  " : "FAIL", what);
    if (!cond) failures++;
}

#define INIT(s)                     \
    do {                            \
        memset(&(s), 0, sizeof(s)); \
        (s).size = sizeof(s);       \
    } while (0)

#endif
