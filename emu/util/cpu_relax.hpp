// The pause hint for the emulator's spin loops (the queue engine's doorbell and barrier
// waits, a blocked slice's poll). userlib has its own (runtime/cpu_relax.hpp): the
// emulator and the library share no code but include/jal/hw.
#pragma once

namespace jal::emu {

inline void cpu_relax()
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}

}  // namespace jal::emu
