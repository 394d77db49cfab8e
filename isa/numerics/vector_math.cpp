// The vector engine's transcendental functions (docs/numerics.md, "Vector math"). The
// scalar and AVX2 versions perform the same IEEE operations in the same order (fused where
// written as fma, nowhere else: this file is built with -ffp-contract=off), so they agree
// bit for bit. NaN inputs give the canonical NaN.
#include <jal/isa/tile_math.hpp>

#include "bits.hpp"
#include "kernels.hpp"

#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#define JAL_AVX2 __attribute__((target("avx2,fma,f16c")))
#endif

namespace jal::numerics {

namespace {

// exp(x) = 2^n * e^r, n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2] (Cody-Waite
// with ln 2 = C1 + C2; x - n C1 is exact); e^r = 1 + r + r^2 P(r) with Cephes' expf
// polynomial; 2^n applied in two exact-exponent steps so that subnormal results round once.
constexpr float kExpHi = 89.0f;       // exp(89) overflows; larger x give inf as well
constexpr float kExpLo = -104.0f;     // exp(-104) rounds to 0; smaller x too
constexpr float kLog2e = 0x1.715476p+0f;
constexpr float kRound = 0x1.8p23f;   // adding it rounds a float of magnitude < 2^22 to an integer
constexpr float kC1 = 0x1.62e43p-1f;  // float(ln 2)
constexpr float kC2 = -0x1.05c61p-29f; // ln 2 - C1
constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f,
                kP3 = 4.1665795894e-2f, kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;
constexpr float kSiluFloor = -1e30f;  // x * exp(x) for x below this is -0 anyway (keeps -inf * 0 away)

float exp_core(float x) {
    float xc = x > kExpHi ? kExpHi : (x < kExpLo ? kExpLo : x);
    float t = std::fma(xc, kLog2e, kRound);
    int32_t n = int32_t(to_bits(t)) - int32_t(to_bits(kRound));
    float nf = t - kRound;
    float r = std::fma(-nf, kC1, xc);
    r = std::fma(-nf, kC2, r);
    float p = std::fma(kP0, r, kP1);
    p = std::fma(p, r, kP2);
    p = std::fma(p, r, kP3);
    p = std::fma(p, r, kP4);
    p = std::fma(p, r, kP5);
    float r2 = r * r;
    float y = std::fma(p, r2, r) + 1.0f;
    int32_t n1 = n >> 1, n2 = n - n1;
    float s1 = from_bits(uint32_t(n1 + 127) << 23), s2 = from_bits(uint32_t(n2 + 127) << 23);
    return (y * s1) * s2;
}

float canonical_nan() { return from_bits(kCanonicalNaN); }

}  // namespace

void exp_scalar(const float *x, float *y, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = std::isnan(v) ? canonical_nan() : exp_core(v);
    }
}

// sigmoid(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0, e = exp(-|x|) <= 1.
void sigmoid_scalar(const float *x, float *y, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float e = exp_core(-std::fabs(v));
        float den = 1.0f + e;
        float num = v < 0.0f ? e : 1.0f;
        y[i] = std::isnan(v) ? canonical_nan() : num / den;
    }
}

// silu(x) = x * sigmoid(x) = x / (1 + e) for x >= 0 and (x e) / (1 + e) for x < 0.
void silu_scalar(const float *x, float *y, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float e = exp_core(-std::fabs(v));
        float den = 1.0f + e;
        float vc = v < kSiluFloor ? kSiluFloor : v;
        float num = v < 0.0f ? vc * e : v;
        y[i] = std::isnan(v) ? canonical_nan() : num / den;
    }
}

#if defined(__x86_64__)

namespace {

JAL_AVX2 inline __m256 exp_core8(__m256 x) {
    __m256 xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kExpLo)), _mm256_set1_ps(kExpHi));
    __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(kLog2e), _mm256_set1_ps(kRound));
    __m256i n = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(_mm256_set1_ps(kRound)));
    __m256 nf = _mm256_sub_ps(t, _mm256_set1_ps(kRound));
    __m256 r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(kC1), xc);
    r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(kC2), r);
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(kP0), r, _mm256_set1_ps(kP1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP5));
    __m256 r2 = _mm256_mul_ps(r, r);
    __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.0f));
    __m256i n1 = _mm256_srai_epi32(n, 1);
    __m256i n2 = _mm256_sub_epi32(n, n1);
    __m256i bias = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(y, s1), s2);
}

JAL_AVX2 inline __m256 nan_to_canonical(__m256 x, __m256 v) {
    __m256 isnan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    return _mm256_blendv_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(int(kCanonicalNaN))), isnan);
}

JAL_AVX2 inline __m256 abs8(__m256 x) {
    return _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
}

JAL_AVX2 void exp_avx2_impl(const float *x, float *y, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        _mm256_storeu_ps(y + i, nan_to_canonical(v, exp_core8(v)));
    }
    if (i < n)
        exp_scalar(x + i, y + i, n - i);
}

JAL_AVX2 void sigmoid_avx2_impl(const float *x, float *y, size_t n) {
    size_t i = 0;
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 e = exp_core8(_mm256_sub_ps(zero, abs8(v)));
        __m256 den = _mm256_add_ps(one, e);
        __m256 neg = _mm256_cmp_ps(v, zero, _CMP_LT_OQ);
        __m256 num = _mm256_blendv_ps(one, e, neg);
        _mm256_storeu_ps(y + i, nan_to_canonical(v, _mm256_div_ps(num, den)));
    }
    if (i < n)
        sigmoid_scalar(x + i, y + i, n - i);
}

JAL_AVX2 void silu_avx2_impl(const float *x, float *y, size_t n) {
    size_t i = 0;
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 e = exp_core8(_mm256_sub_ps(zero, abs8(v)));
        __m256 den = _mm256_add_ps(one, e);
        __m256 vc = _mm256_max_ps(v, _mm256_set1_ps(kSiluFloor));
        __m256 neg = _mm256_cmp_ps(v, zero, _CMP_LT_OQ);
        __m256 num = _mm256_blendv_ps(v, _mm256_mul_ps(vc, e), neg);
        _mm256_storeu_ps(y + i, nan_to_canonical(v, _mm256_div_ps(num, den)));
    }
    if (i < n)
        silu_scalar(x + i, y + i, n - i);
}

}  // namespace

void exp_avx2(const float *x, float *y, size_t n) { exp_avx2_impl(x, y, n); }
void sigmoid_avx2(const float *x, float *y, size_t n) { sigmoid_avx2_impl(x, y, n); }
void silu_avx2(const float *x, float *y, size_t n) { silu_avx2_impl(x, y, n); }

#else

void exp_avx2(const float *x, float *y, size_t n) { exp_scalar(x, y, n); }
void sigmoid_avx2(const float *x, float *y, size_t n) { sigmoid_scalar(x, y, n); }
void silu_avx2(const float *x, float *y, size_t n) { silu_scalar(x, y, n); }

#endif

void exp_f32(const float *x, float *y, size_t n) {
    (active_isa() == Isa::avx2 ? exp_avx2 : exp_scalar)(x, y, n);
}
void sigmoid_f32(const float *x, float *y, size_t n) {
    (active_isa() == Isa::avx2 ? sigmoid_avx2 : sigmoid_scalar)(x, y, n);
}
void silu_f32(const float *x, float *y, size_t n) {
    (active_isa() == Isa::avx2 ? silu_avx2 : silu_scalar)(x, y, n);
}

// Correctly rounded compositions: IEEE division and square root round once in every path.
void rsqrt_f32(const float *x, float *y, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = std::isnan(v) ? canonical_nan() : 1.0f / std::sqrt(v);
        if (std::isnan(y[i]))
            y[i] = canonical_nan();
    }
}
void recip_f32(const float *x, float *y, size_t n) {
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = std::isnan(v) ? canonical_nan() : 1.0f / v;
    }
}

}  // namespace jal::numerics
