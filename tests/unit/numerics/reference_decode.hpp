// Independent decoders for the tests: every format's value computed in double straight
// from its bit fields as OCP MX v1.0 and IEEE 754 define them, sharing no code with
// isa/numerics.
#pragma once

#include <jal/hw/isa.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace numerics_test {

inline double nan_value()
{
    return std::numeric_limits<double>::quiet_NaN();
}

// A sign-exponent-mantissa code with the IEEE layout: e == 0 is subnormal.
inline double sem_value(uint32_t sign, uint32_t exp, uint32_t mant, int mbits, int bias)
{
    double m =
        exp == 0 ? double(mant) / double(1u << mbits) : 1.0 + double(mant) / double(1u << mbits);
    int e = exp == 0 ? 1 - bias : int(exp) - bias;
    double v = std::ldexp(m, e);
    return sign ? -v : v;
}

inline double ref_e2m1(uint8_t c)
{
    return sem_value((c >> 3) & 1, (c >> 1) & 3, c & 1, 1, 1);
}

inline double ref_e4m3(uint8_t c)
{
    if ((c & 0x7f) == 0x7f)
        return nan_value();  // OCP E4M3: S.1111.111 is NaN, there is no infinity
    return sem_value(c >> 7, (c >> 3) & 0xf, c & 7, 3, 7);
}

inline double ref_e5m2(uint8_t c)
{
    uint32_t e = (c >> 2) & 0x1f, m = c & 3;
    if (e == 31) return m ? nan_value() : (c & 0x80 ? -INFINITY : INFINITY);
    return sem_value(c >> 7, e, m, 2, 15);
}

inline double ref_e8m0(uint8_t e)
{
    return e == 0xff ? nan_value() : std::ldexp(1.0, int(e) - 127);
}

inline double ref_f16(uint16_t h)
{
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 31) return m ? nan_value() : (h & 0x8000 ? -INFINITY : INFINITY);
    return sem_value(h >> 15, e, m, 10, 15);
}

inline double ref_bf16(uint16_t h)
{
    uint32_t e = (h >> 7) & 0xff, m = h & 0x7f;
    if (e == 255) return m ? nan_value() : (h & 0x8000 ? -INFINITY : INFINITY);
    return sem_value(h >> 15, e, m, 7, 127);
}

// A row of n elements of any matrix dtype, decoded to double.
inline std::vector<double> ref_decode_row(jal_dtype dt, const void* src, size_t n)
{
    const uint8_t* p = static_cast<const uint8_t*>(src);
    std::vector<double> out(n);
    for (size_t i = 0; i < n; i++) {
        size_t b = i / 32, j = i % 32;
        switch (dt) {
        case JAL_DT_F32: {
            float f;
            std::memcpy(&f, p + 4 * i, 4);
            out[i] = f;
            break;
        }
        case JAL_DT_BF16:
        case JAL_DT_F16: {
            uint16_t h;
            std::memcpy(&h, p + 2 * i, 2);
            out[i] = dt == JAL_DT_BF16 ? ref_bf16(h) : ref_f16(h);
            break;
        }
        case JAL_DT_MXFP8_E4M3:
        case JAL_DT_MXFP8_E5M2: {
            const uint8_t* blk = p + b * 33;
            double el = dt == JAL_DT_MXFP8_E4M3 ? ref_e4m3(blk[1 + j]) : ref_e5m2(blk[1 + j]);
            out[i] = el * ref_e8m0(blk[0]);
            break;
        }
        case JAL_DT_MXFP4: {
            const uint8_t* blk = p + b * 17;
            uint8_t code = j < 16 ? blk[1 + j] & 0xf : blk[1 + j - 16] >> 4;
            out[i] = ref_e2m1(code) * ref_e8m0(blk[0]);
            break;
        }
        case JAL_DT_Q8_0: {
            const uint8_t* blk = p + b * 34;
            uint16_t d;
            std::memcpy(&d, blk, 2);
            out[i] = double(int8_t(blk[2 + j])) * ref_f16(d);
            break;
        }
        default:
            out[i] = nan_value();
        }
    }
    return out;
}

inline uint32_t bits_of(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
inline float float_of(uint32_t u)
{
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

}  // namespace numerics_test
