// The scalar element formats: BF16, F16, E8M0 and the OCP MX element types (E2M1, E4M3,
// E5M2). Pure bit manipulation and exact float arithmetic, so every host agrees.
#include <jal/isa/numerics.hpp>

#include "bits.hpp"

#include <cmath>

namespace jal::numerics {

float bf16_to_f32(uint16_t h)
{
    uint32_t u = uint32_t(h) << 16;
    if ((u & 0x7fffffffu) > 0x7f800000u)
        u |= 0x00400000u;  // quiet a signalling NaN, as every conversion instruction does
    return from_bits(u);
}

uint16_t f32_to_bf16(float f)
{
    uint32_t u = to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even; carries into the exponent
    return uint16_t(u >> 16);
}

float f16_to_f32(uint16_t h)
{
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    if (exp == 0) {
        // zero or subnormal: mant * 2^-24, exact in F32
        float v = float(mant) * 0x1p-24f;
        return from_bits(to_bits(v) | sign);
    }
    if (exp == 31) return from_bits(sign | 0x7f800000u | (mant << 13) | (mant ? 0x00400000u : 0u));
    return from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t f32_to_f16(float f)
{
    uint32_t u = to_bits(f);
    uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    u &= 0x7fffffffu;
    if (u > 0x7f800000u) return sign | 0x7e00u;   // NaN: ggml's (and F16C's default) quiet NaN
    if (u >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to infinity
    if (u >= 0x38800000u) {
        // normal half: rebias the exponent and round the 13 dropped bits to nearest even
        u -= 0x38000000u;
        u += 0x0fffu + ((u >> 13) & 1u);
        return sign | uint16_t(u >> 13);
    }
    uint32_t e = u >> 23;
    if (e < 102) return sign;  // below 2^-25 (or exactly half of the smallest subnormal: even, 0)
    uint32_t m = (u & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;  // 14..24: value = m * 2^(e-150), unit 2^-24
    uint32_t h = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1u))) h++;
    return sign | uint16_t(h);
}

float e8m0_to_f32(uint8_t e)
{
    if (e == 0xff) return from_bits(0x7fc00000u);
    if (e == 0) return from_bits(0x00400000u);  // 2^-127, subnormal
    return from_bits(uint32_t(e) << 23);
}

float e8m0_to_f32_half(uint8_t e)
{
    if (e == 0xff) return from_bits(0x7fc00000u);
    if (e < 2) return from_bits(0x00200000u << e);  // 2^-128, 2^-127
    return from_bits(uint32_t(e - 1) << 23);
}

float fp4_e2m1_to_f32(uint8_t nibble)
{
    static constexpr float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    float v = mag[nibble & 7];
    return (nibble & 8) ? -v : v;
}

namespace {

// Decodes an 8-bit minifloat with the given exponent/mantissa widths and bias (finite codes).
float minifloat_to_f32(uint8_t v, int mbits, int bias)
{
    int ebits = 7 - mbits;
    int e = (v >> mbits) & ((1 << ebits) - 1);
    int m = v & ((1 << mbits) - 1);
    float mag = e == 0 ? std::ldexp(float(m), 1 - bias - mbits)
                       : std::ldexp(float(m | (1 << mbits)), e - bias - mbits);
    return (v & 0x80) ? -mag : mag;
}

struct Fp8Tables {
    float e4m3[256];
    float e5m2[256];
    Fp8Tables()
    {
        for (int i = 0; i < 256; i++) {
            e4m3[i] = (i & 0x7f) == 0x7f ? from_bits(0x7fc00000u | (i & 0x80 ? 0x80000000u : 0u))
                                         : minifloat_to_f32(uint8_t(i), 3, 7);
            int e5 = (i >> 2) & 0x1f;
            if (e5 == 31)
                e5m2[i] = (i & 3) ? from_bits(0x7fc00000u | (i & 0x80 ? 0x80000000u : 0u))
                                  : ((i & 0x80) ? -INFINITY : INFINITY);
            else
                e5m2[i] = minifloat_to_f32(uint8_t(i), 2, 15);
        }
    }
};

const Fp8Tables& fp8_tables()
{
    static const Fp8Tables t;
    return t;
}

// Rounds |f| (finite, not NaN) to the nearest representable magnitude of a minifloat with
// mbits mantissa bits, minimum normal exponent emin and largest finite value max_code's
// magnitude, ties to even, saturating; returns the magnitude code (exponent|mantissa).
uint32_t round_minifloat(float a, int mbits, int emin, int bias, uint32_t max_code, float max_val)
{
    if (!(a < max_val)) return max_code;
    if (a == 0.0f) return 0;
    int e2;
    std::frexp(a, &e2);  // a = fr * 2^e2, fr in [0.5, 1)
    int E = e2 - 1 > emin ? e2 - 1 : emin;
    // a / quantum is exact (a power-of-two scaling of a normal float into [0, 2^(mbits+1)])
    float q = std::nearbyint(std::ldexp(a, mbits - E));
    uint32_t qi = uint32_t(q);
    if (qi == (2u << mbits)) {  // rounded up into the next binade
        qi = 1u << mbits;
        E++;
    }
    uint32_t code;
    if (qi < (1u << mbits))
        code = qi;  // subnormal (E == emin)
    else
        code = (uint32_t(E + bias) << mbits) | (qi - (1u << mbits));
    return code > max_code ? max_code : code;
}

}  // namespace

float fp8_e4m3_to_f32(uint8_t v)
{
    return fp8_tables().e4m3[v];
}
float fp8_e5m2_to_f32(uint8_t v)
{
    return fp8_tables().e5m2[v];
}
const float* fp8_table(jal_dtype dt)
{
    return dt == JAL_DT_MXFP8_E4M3 ? fp8_tables().e4m3 : fp8_tables().e5m2;
}

uint8_t f32_to_fp8_e4m3(float f)
{
    uint8_t sign = std::signbit(f) ? 0x80 : 0;
    if (std::isnan(f)) return sign | 0x7f;
    return sign | uint8_t(round_minifloat(std::fabs(f), 3, -6, 7, 0x7e, 448.0f));
}

uint8_t f32_to_fp8_e5m2(float f)
{
    uint8_t sign = std::signbit(f) ? 0x80 : 0;
    if (std::isnan(f)) return sign | 0x7e;
    return sign | uint8_t(round_minifloat(std::fabs(f), 2, -14, 15, 0x7b, 57344.0f));
}

uint8_t f32_to_fp4_e2m1(float f)
{
    if (std::isnan(f)) return 0;
    uint8_t sign = std::signbit(f) ? 0x8 : 0;
    return sign | uint8_t(round_minifloat(std::fabs(f), 1, 0, 1, 0x7, 6.0f));
}

}  // namespace jal::numerics
