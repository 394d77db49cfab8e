// Which code path the numerics run: AVX2+FMA+F16C when the host has them, else scalar.
// Both give identical bits; the choice only changes speed.
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

namespace {
std::atomic<Isa>& selected()
{
    static std::atomic<Isa> isa{host_has_avx2() ? Isa::avx2 : Isa::scalar};
    return isa;
}
}  // namespace

Isa active_isa()
{
    return selected().load(std::memory_order_relaxed);
}

void force_isa(Isa isa)
{
    if (isa == Isa::avx2 && !host_has_avx2()) isa = Isa::scalar;
    selected().store(isa, std::memory_order_relaxed);
}

}  // namespace jal::numerics
