// The pause hint for spin loops.
#pragma once

namespace jal::runtime::detail {

inline void cpu_relax()
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

}  // namespace jal::runtime::detail
