// Rows of elements: sizes, decoding any dtype to F32 and encoding F32 to any dtype
// (docs/numerics.md, "Conversions"). One code path: conversions are not where the time
// goes, and one path cannot disagree with itself.
#include <jal/isa/numerics.hpp>

#include "bits.hpp"
#include "mx_scale.hpp"

#include <cmath>
#include <cstring>

namespace jal::numerics {

size_t element_block(jal_dtype dt)
{
    switch (dt) {
    case JAL_DT_F32:
    case JAL_DT_BF16:
    case JAL_DT_F16:
    case JAL_DT_I32:
        return 1;
    case JAL_DT_MXFP8_E4M3:
    case JAL_DT_MXFP8_E5M2:
    case JAL_DT_MXFP4:
    case JAL_DT_Q8_0:
        return JAL_MX_BLOCK;
    }
    return 0;
}

size_t block_bytes(jal_dtype dt)
{
    switch (dt) {
    case JAL_DT_F32:
    case JAL_DT_I32:
        return 4;
    case JAL_DT_BF16:
    case JAL_DT_F16:
        return 2;
    case JAL_DT_MXFP8_E4M3:
    case JAL_DT_MXFP8_E5M2:
        return sizeof(jal_block_mxfp8);
    case JAL_DT_MXFP4:
        return sizeof(jal_block_mxfp4);
    case JAL_DT_Q8_0:
        return sizeof(jal_block_q8_0);
    }
    return 0;
}

size_t row_bytes(jal_dtype dt, size_t n)
{
    size_t blk = element_block(dt);
    if (blk == 0 || n % blk != 0) return 0;
    return n / blk * block_bytes(dt);
}

namespace {

// ggml's kvalues_mxfp4: E2M1 values doubled, so they are integers.
constexpr int8_t kValuesMxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

void dequantize_mxfp4(const jal_block_mxfp4* x, float* y, size_t n)
{
    for (size_t i = 0; i < n / 32; i++) {
        const float d = e8m0_to_f32_half(x[i].e);
        for (int j = 0; j < 16; j++) {
            y[i * 32 + j] = float(kValuesMxfp4[x[i].qs[j] & 0xf]) * d;
            y[i * 32 + j + 16] = float(kValuesMxfp4[x[i].qs[j] >> 4]) * d;
        }
    }
}

void dequantize_mxfp8(jal_dtype dt, const jal_block_mxfp8* x, float* y, size_t n)
{
    const float* table = fp8_table(dt);
    for (size_t i = 0; i < n / 32; i++) {
        const float d = e8m0_to_f32(x[i].e);
        for (int j = 0; j < 32; j++) y[i * 32 + j] = table[x[i].q[j]] * d;
    }
}

void dequantize_q8_0(const jal_block_q8_0* x, float* y, size_t n)
{
    for (size_t i = 0; i < n / 32; i++) {
        const float d = f16_to_f32(x[i].d);
        for (int j = 0; j < 32; j++) y[i * 32 + j] = float(x[i].qs[j]) * d;
    }
}

// OCP MX v1.0 conversion of one block: shared exponent floor(log2(amax)) - emax_elem, then
// every element divided by the scale and rounded to nearest even, saturating. A block with
// a NaN or an infinity gets the NaN scale (0xff) and zero elements.
template <typename Encode>
uint8_t quantize_block_ocp(const float* x, int emax_elem, uint8_t* codes, Encode encode)
{
    float amax = 0.0f;
    bool special = false;
    for (int j = 0; j < 32; j++) {
        if (!std::isfinite(x[j])) special = true;
        float a = std::fabs(x[j]);
        if (a > amax) amax = a;
    }
    if (special) {
        std::memset(codes, 0, 32);
        return 0xff;
    }
    int e = amax == 0.0f ? 0 : floor_log2(amax) - emax_elem + 127;
    if (e < 0) e = 0;
    // divide by 2^(e-127) in two exact steps (2^-127 and 2^127 are not both normal floats)
    int s = 127 - e;
    float s1 = std::ldexp(1.0f, s / 2), s2 = std::ldexp(1.0f, s - s / 2);
    for (int j = 0; j < 32; j++) codes[j] = encode(x[j] * s1 * s2);
    return uint8_t(e);
}

void quantize_mxfp4_ocp(const float* x, jal_block_mxfp4* y, size_t n)
{
    for (size_t i = 0; i < n / 32; i++) {
        uint8_t codes[32];
        y[i].e = quantize_block_ocp(x + i * 32, 2, codes, f32_to_fp4_e2m1);
        for (int j = 0; j < 16; j++) y[i].qs[j] = uint8_t(codes[j] | (codes[j + 16] << 4));
    }
}

// ggml's best_index_mxfp4: the code whose value is nearest, ties to the lower index,
// with the error computed in float exactly as ggml computes it.
int best_index_mxfp4(float x, float d)
{
    int best = 0;
    float best_err = std::fabs(float(kValuesMxfp4[0]) * d - x);
    for (int i = 1; i < 16; i++) {
        float err = std::fabs(float(kValuesMxfp4[i]) * d - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return best;
}

// ggml's quantize_row_mxfp4_ref, operation for operation.
void quantize_mxfp4_ggml(const float* x, jal_block_mxfp4* y, size_t n)
{
    for (size_t i = 0; i < n / 32; i++) {
        const float* xb = x + i * 32;
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) {
            float a = std::fabs(xb[j]);
            if (amax < a) amax = a;
        }
        // (uint8_t)(floorf(log2f(amax)) - 2 + 127) in float, converted as x86 does
        uint8_t e = 0;
        if (amax > 0.0f) {
            float l = ggml_floor_log2f(amax);
            e = uint8_t(cvtt_i32(l - 2.0f + 127.0f));
        }
        // ggml's GGML_E8M0_TO_FP32_HALF has no NaN case; e is never 0xff here anyway
        const float d = e8m0_to_f32_half(e);
        y[i].e = e;
        for (int j = 0; j < 16; j++) {
            int x0 = best_index_mxfp4(xb[j], d);
            int x1 = best_index_mxfp4(xb[j + 16], d);
            y[i].qs[j] = uint8_t(x0 | (x1 << 4));
        }
    }
}

void quantize_mxfp8(jal_dtype dt, const float* x, jal_block_mxfp8* y, size_t n)
{
    bool e4m3 = dt == JAL_DT_MXFP8_E4M3;
    for (size_t i = 0; i < n / 32; i++)
        y[i].e = quantize_block_ocp(x + i * 32, e4m3 ? 8 : 15, y[i].q,
                                    e4m3 ? f32_to_fp8_e4m3 : f32_to_fp8_e5m2);
}

// cvtt_i32(roundf(r)) without the libm call: truncate, then step away from zero when the
// dropped fraction is at least one half (exact: r - trunc(r) is exact below 2^23, and r is
// an integer above). NaN and out-of-range stay INT32_MIN, as cvttss2si gives.
int32_t round_away_i32(float r)
{
    int32_t i = cvtt_i32(r);
    if (i == INT32_MIN)
        return cvtt_i32(std::round(r));  // out of range or NaN (or exactly -2^31): rare
    float frac = r - float(i);
    if (frac >= 0.5f)
        i++;
    else if (frac <= -0.5f)
        i--;
    return i;
}

// ggml's quantize_row_q8_0_ref, operation for operation.
void quantize_q8_0(const float* x, jal_block_q8_0* y, size_t n)
{
    for (size_t i = 0; i < n / 32; i++) {
        const float* xb = x + i * 32;
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) {
            float a = std::fabs(xb[j]);
            amax = amax > a ? amax : a;  // ggml's MAX(amax, fabsf(v))
        }
        const float d = amax / 127.0f;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f32_to_f16(d);
        for (int j = 0; j < 32; j++) y[i].qs[j] = int8_t(uint8_t(round_away_i32(xb[j] * id)));
    }
}

int32_t f32_to_i32(float f)
{
    if (std::isnan(f)) return 0;
    float r = std::nearbyint(f);
    if (r >= 2147483648.0f) return INT32_MAX;
    if (r < -2147483648.0f) return INT32_MIN;
    return int32_t(r);
}

}  // namespace

void dequantize_row(jal_dtype dt, const void* src, float* dst, size_t n)
{
    if (row_bytes(dt, n) == 0 && n != 0) return;
    switch (dt) {
    case JAL_DT_F32:
        std::memmove(dst, src, n * 4);
        break;
    case JAL_DT_I32:
        for (size_t i = 0; i < n; i++) {
            int32_t v;
            std::memcpy(&v, static_cast<const char*>(src) + 4 * i, 4);
            dst[i] = float(v);
        }
        break;
    case JAL_DT_BF16:
    case JAL_DT_F16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            std::memcpy(&h, static_cast<const char*>(src) + 2 * i, 2);
            dst[i] = dt == JAL_DT_BF16 ? bf16_to_f32(h) : f16_to_f32(h);
        }
        break;
    case JAL_DT_MXFP8_E4M3:
    case JAL_DT_MXFP8_E5M2:
        dequantize_mxfp8(dt, static_cast<const jal_block_mxfp8*>(src), dst, n);
        break;
    case JAL_DT_MXFP4:
        dequantize_mxfp4(static_cast<const jal_block_mxfp4*>(src), dst, n);
        break;
    case JAL_DT_Q8_0:
        dequantize_q8_0(static_cast<const jal_block_q8_0*>(src), dst, n);
        break;
    }
}

void quantize_row(jal_dtype dt, const float* src, void* dst, size_t n, jal_cvt_mode mode)
{
    if (row_bytes(dt, n) == 0 && n != 0) return;
    char* out = static_cast<char*>(dst);
    switch (dt) {
    case JAL_DT_F32:
        std::memmove(dst, src, n * 4);
        break;
    case JAL_DT_I32:
        for (size_t i = 0; i < n; i++) {
            int32_t v = f32_to_i32(src[i]);
            std::memcpy(out + 4 * i, &v, 4);
        }
        break;
    case JAL_DT_BF16:
    case JAL_DT_F16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h = dt == JAL_DT_BF16 ? f32_to_bf16(src[i]) : f32_to_f16(src[i]);
            std::memcpy(out + 2 * i, &h, 2);
        }
        break;
    case JAL_DT_MXFP8_E4M3:
    case JAL_DT_MXFP8_E5M2:
        quantize_mxfp8(dt, src, static_cast<jal_block_mxfp8*>(dst), n);
        break;
    case JAL_DT_MXFP4:
        if (mode == JAL_CVT_GGML)
            quantize_mxfp4_ggml(src, static_cast<jal_block_mxfp4*>(dst), n);
        else
            quantize_mxfp4_ocp(src, static_cast<jal_block_mxfp4*>(dst), n);
        break;
    case JAL_DT_Q8_0:
        quantize_q8_0(src, static_cast<jal_block_q8_0*>(dst), n);
        break;
    }
}

}  // namespace jal::numerics
