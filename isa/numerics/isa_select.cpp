// Which code path the numerics run: AVX2+FMA+F16C when the host has them (with AVX-512
// kernels where the host has AVX-512 F, BW, VL and VBMI), else scalar. Every path gives
// identical bits; the choice only changes speed.
#include <jal/isa/numerics.hpp>

#include "kernels.hpp"

#include <atomic>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace jal::numerics {

bool host_has_avx2()
{
#if defined(__x86_64__) || defined(__i386__)
    static const bool has = [] {
        __builtin_cpu_init();
        // F16C through cpuid: clang (14) has no "f16c" for __builtin_cpu_supports.
        unsigned eax, ebx, ecx, edx;
        const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C);
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
    }();
    return has;
#else
    return false;
#endif
}

bool host_has_avx512()
{
#if defined(__x86_64__)
    static const bool has = [] {
        __builtin_cpu_init();
        return host_has_avx2() && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512vbmi");
    }();
    return has;
#else
    return false;
#endif
}

Isa best_isa()
{
    return host_has_avx512() ? Isa::avx512 : host_has_avx2() ? Isa::avx2 : Isa::scalar;
}

namespace {
std::atomic<Isa>& selected()
{
    static std::atomic<Isa> isa{best_isa()};
    return isa;
}
}  // namespace

Isa active_isa()
{
    return selected().load(std::memory_order_relaxed);
}

void force_isa(Isa isa)
{
    if (isa == Isa::avx512 && !host_has_avx512()) isa = Isa::avx2;
    if (isa == Isa::avx2 && !host_has_avx2()) isa = Isa::scalar;
    selected().store(isa, std::memory_order_relaxed);
}

}  // namespace jal::numerics
