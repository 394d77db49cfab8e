// Exponents for MX block scales: the exact floor(log2) of OCP MX and the one ggml gets from
// floorf(log2f(x)), which differs just below powers of two where log2f rounds up.
#include "mx_scale.hpp"

#include "bits.hpp"

#include <cmath>

namespace jal::numerics {

int floor_log2(float a)
{
    uint32_t u = to_bits(a) & 0x7fffffffu;
    int e = int(u >> 23);
    if (e != 0) return e - 127;
    // subnormal: the highest set mantissa bit
    return -149 + (31 - __builtin_clz(u));  // a = u * 2^-149
}

namespace {

// thresholds[k + 149]: the smallest float in [2^k, 2^(k+1)) whose correctly rounded
// log2 is k + 1 (or 2^(k+1) itself when there is none), for k = -149..127.
struct Log2Thresholds {
    float t[277];
    Log2Thresholds()
    {
        for (int k = -149; k <= 127; k++) {
            int j = k + 1;                           // the integer log2 may round up to
            float top = std::ldexp(1.0f, k) * 2.0f;  // 2^(k+1) (inf for k = 127)
            if (k == 127) top = INFINITY;
            if (j == 0) {
                t[k + 149] = top;
                continue;
            }
            // half the spacing of floats next to j, on the side towards k (towards zero)
            int a = j < 0 ? -j : j;
            int p = 31 - __builtin_clz(unsigned(a));
            bool pow2 = (a & (a - 1)) == 0;
            // towards zero from a: below a if j > 0, above |j| on the magnitude side if j < 0
            double spacing = std::ldexp(1.0, (j > 0 && pow2) ? p - 24 : p - 23);
            double delta = spacing / 2;
            // log2(x) >= j - delta  <=>  x >= 2^(j - delta) = 2^(k+1) * 2^-delta
            double bound = std::ldexp(std::exp2(-delta), k + 1);
            float f = float(bound);  // round to nearest, then make sure it is >= bound
            if (double(f) < bound) f = std::nextafter(f, INFINITY);
            if (!(f < top)) f = top;
            t[k + 149] = f;
        }
    }
};

const Log2Thresholds& thresholds()
{
    static const Log2Thresholds t;
    return t;
}

}  // namespace

float ggml_floor_log2f(float a)
{
    if (std::isinf(a)) return a;
    int k = floor_log2(a);
    return float(a >= thresholds().t[k + 149] ? k + 1 : k);
}

}  // namespace jal::numerics
