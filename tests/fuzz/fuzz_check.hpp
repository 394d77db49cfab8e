// FUZZ_CHECK(cond): an invariant of a fuzz target. When it fails the input is a finding:
// the message names the check and the process aborts, so libFuzzer saves the input as a
// crash (build-fuzz/bin/fuzz-NAME crash-FILE reproduces it).
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
            std::abort();                                                                     \
        }                                                                                     \
    } while (0)
