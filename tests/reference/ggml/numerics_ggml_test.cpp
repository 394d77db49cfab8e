// The numerics of the tile ISA bit for bit against ggml (the independent reference,
// docs/numerics.md "Agreement with ggml"): MXFP4 and Q8_0 rows in both directions, the
// ggml MXFP4 rounding (JAL_CVT_GGML), F16 conversions, and the MXFP4 x Q8_0 and Q8_0 x Q8_0
// dot products through ggml_get_type_traits_cpu(type)->vec_dot of the baseline x86-64 CPU
// library, whose loops are the scalar ones (d = d_w * d_x, sum += d * isum). The F16 x F16
// dot product (F16 weights in llama.cpp's numerics) is compared within its rounding bound:
// ggml adds the (exact) products in another order and precision.
#include <jal/isa/tile_math.hpp>

#include <ggml-cpu.h>
#include <ggml.h>

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace jal::numerics;

namespace {

using DequantizeFn = void (*)(const void*, float*, int64_t);
using QuantizeFn = void (*)(const float*, void*, int64_t);
using Fp16ToFp32Fn = float (*)(uint16_t);
using Fp32ToFp16Fn = uint16_t (*)(float);
using TraitsFn = const ggml_type_traits_cpu* (*)(ggml_type);

struct Ggml {
    void *base = nullptr, *cpu = nullptr;
    DequantizeFn dequantize_mxfp4 = nullptr, dequantize_q8_0 = nullptr;
    QuantizeFn quantize_mxfp4 = nullptr, quantize_q8_0 = nullptr;
    Fp16ToFp32Fn fp16_to_fp32 = nullptr;
    Fp32ToFp16Fn fp32_to_fp16 = nullptr;
    ggml_vec_dot_t vec_dot_mxfp4_q8_0 = nullptr, vec_dot_q8_0 = nullptr, vec_dot_f16 = nullptr;
    ggml_type vec_dot_type = GGML_TYPE_COUNT, vec_dot_type_q8_0 = GGML_TYPE_COUNT,
              vec_dot_type_f16 = GGML_TYPE_COUNT;
    std::string error;

    template <typename T>
    bool sym(void* lib, const char* name, T& out)
    {
        out = reinterpret_cast<T>(dlsym(lib, name));
        if (!out) error += std::string("missing ") + name + "; ";
        return out != nullptr;
    }

    Ggml()
    {
        const std::string dir = std::string(JAL_LLAMA_REF) + "/lib/";
        base = dlopen((dir + "libggml-base.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
        if (!base) {
            error = dlerror();
            return;
        }
        cpu = dlopen((dir + "libggml-cpu-x64.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
        if (!cpu) {
            error = dlerror();
            return;
        }
        sym(base, "dequantize_row_mxfp4", dequantize_mxfp4);
        sym(base, "dequantize_row_q8_0", dequantize_q8_0);
        sym(base, "quantize_row_mxfp4_ref", quantize_mxfp4);
        sym(base, "quantize_row_q8_0_ref", quantize_q8_0);
        sym(base, "ggml_fp16_to_fp32", fp16_to_fp32);
        sym(base, "ggml_fp32_to_fp16", fp32_to_fp16);
        void (*cpu_init)() = nullptr;
        TraitsFn traits = nullptr;
        if (sym(cpu, "ggml_cpu_init", cpu_init) && sym(cpu, "ggml_get_type_traits_cpu", traits)) {
            cpu_init();  // fills the F16 table the baseline vec_dot reads
            const ggml_type_traits_cpu* t = traits(GGML_TYPE_MXFP4);
            vec_dot_mxfp4_q8_0 = t->vec_dot;
            vec_dot_type = t->vec_dot_type;
            vec_dot_q8_0 = traits(GGML_TYPE_Q8_0)->vec_dot;
            vec_dot_type_q8_0 = traits(GGML_TYPE_Q8_0)->vec_dot_type;
            vec_dot_f16 = traits(GGML_TYPE_F16)->vec_dot;
            vec_dot_type_f16 = traits(GGML_TYPE_F16)->vec_dot_type;
        }
    }
    bool ok() const { return error.empty(); }
};

const Ggml& ggml()
{
    static const Ggml g;
    return g;
}

#define REQUIRE_GGML() \
    ASSERT_TRUE(ggml().ok()) << "cannot load ggml from " JAL_LLAMA_REF ": " << ggml().error

uint32_t bits(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float from_bits(uint32_t u)
{
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

bool same_float(float a, float b)
{
    return bits(a) == bits(b) || (std::isnan(a) && std::isnan(b));
}

// Input rows: random of many kinds, then the edge cases the brief lists.
std::vector<std::vector<float>> input_rows(size_t n)
{
    std::vector<std::vector<float>> rows;
    for (uint32_t seed = 1; seed <= 200; seed++) {
        std::mt19937 rng(seed);
        std::vector<float> r(n);
        switch (seed % 5) {
        case 0: {
            std::normal_distribution<float> d(0.0f, 1.0f);
            for (auto& v : r) v = d(rng);
            break;
        }
        case 1: {  // magnitudes over 60 binades in each block
            std::uniform_real_distribution<float> e(-30.0f, 30.0f);
            for (auto& v : r) v = std::exp2(e(rng)) * (rng() & 1 ? -1.0f : 1.0f);
            break;
        }
        case 2: {  // random bit patterns of finite floats
            for (auto& v : r) {
                do v = from_bits(uint32_t(rng()));
                while (!std::isfinite(v));
            }
            break;
        }
        case 3: {  // exact multiples of E2M1 steps (ties everywhere)
            std::uniform_int_distribution<int> q(-24, 24);
            float s = std::ldexp(1.0f, int(rng() % 20) - 10);
            for (auto& v : r) v = float(q(rng)) * 0.25f * s;
            break;
        }
        default: {
            std::uniform_real_distribution<float> u(-1000.0f, 1000.0f);
            for (auto& v : r) v = u(rng);
        }
        }
        rows.push_back(r);
    }
    const float fmax = std::numeric_limits<float>::max();
    const float specials[] = {0.0f, -0.0f,  1.0f,    -3.0f,     1e38f, -fmax,
                              fmax, 1e-40f, -1e-45f, 0x1p-126f, 6.0f,  0.375f};
    for (float s : specials) rows.push_back(std::vector<float>(n, s));  // all equal
    {
        std::vector<float> r(n);
        for (size_t i = 0; i < n; i++)  // mixed: huge next to tiny in every block
            r[i] = (i % 3 == 0 ? 1e30f : i % 3 == 1 ? -1e-30f : 0x1p-140f) * float(1 + i % 7);
        rows.push_back(r);
    }
    {
        std::vector<float> r(n, 0.0f);  // one non-zero element per block
        for (size_t i = 0; i < n; i += 32) r[i + (i / 32) % 32] = -float(i + 1);
        rows.push_back(r);
    }
    // amax at and just below every power of two (128 floats, two rows per binade): where
    // log2f rounds up to the next integer
    for (int k = -149; k <= 127; k++) {
        for (uint32_t first : {0u, 64u}) {
            std::vector<float> r(n);
            float p = k == -149 ? 0x1p-149f : std::ldexp(1.0f, k);
            if (k == 127) p = INFINITY;  // just below 2^128: FLT_MAX and the floats under it
            for (size_t b = 0; b < n / 32; b++) {
                uint32_t below = bits(p) >= first + b ? bits(p) - uint32_t(first + b) : 0;
                if (k == 127) below -= 1;
                for (size_t j = 0; j < 32; j++)
                    r[b * 32 + j] = from_bits(below) * (j == 0 ? 1.0f : float(j % 5) * 0.2f);
            }
            rows.push_back(r);
        }
    }
    return rows;
}

constexpr size_t kN = 64 * 32;  // 64 blocks per row

}  // namespace

TEST(NumericsGgml, QuantizeRowMxfp4RefEqualsCvtGgml)
{
    REQUIRE_GGML();
    size_t rows = 0;
    for (const auto& x : input_rows(kN)) {
        std::vector<uint8_t> want(row_bytes(JAL_DT_MXFP4, kN)), got(want.size());
        ggml().quantize_mxfp4(x.data(), want.data(), int64_t(kN));
        quantize_row(JAL_DT_MXFP4, x.data(), got.data(), kN, JAL_CVT_GGML);
        for (size_t b = 0; b < kN / 32; b++)
            if (std::memcmp(want.data() + 17 * b, got.data() + 17 * b, 17) != 0) {
                ADD_FAILURE() << "row " << rows << " block " << b
                              << ": ggml e=" << int(want[17 * b]) << " ours e=" << int(got[17 * b])
                              << " first value " << std::hexfloat << x[32 * b];
                break;
            }
        rows++;
    }
    EXPECT_GT(rows, 700u);
}

TEST(NumericsGgml, QuantizeRowMxfp4RefWithNaNAndInf)
{
    REQUIRE_GGML();
    std::mt19937 rng(9);
    std::normal_distribution<float> d(0.0f, 3.0f);
    std::vector<float> x(kN);
    for (auto& v : x) v = d(rng);
    x[5] = NAN;
    x[40] = INFINITY;
    x[70] = -INFINITY;
    x[100] = NAN;
    x[101] = -NAN;
    std::vector<uint8_t> want(row_bytes(JAL_DT_MXFP4, kN)), got(want.size());
    ggml().quantize_mxfp4(x.data(), want.data(), int64_t(kN));
    quantize_row(JAL_DT_MXFP4, x.data(), got.data(), kN, JAL_CVT_GGML);
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size()));
}

TEST(NumericsGgml, DequantizeRowMxfp4)
{
    REQUIRE_GGML();
    for (uint32_t seed = 1; seed <= 50; seed++) {
        std::mt19937 rng(seed);
        std::vector<uint8_t> q(row_bytes(JAL_DT_MXFP4, kN));
        for (auto& b : q) b = uint8_t(rng());
        for (size_t b = 0; b < kN / 32; b++) {
            // every scale but 0xff, which ggml does not decode as NaN (docs/numerics.md)
            q[17 * b] = uint8_t((seed * 64 + b) % 255);
        }
        std::vector<float> want(kN), got(kN);
        ggml().dequantize_mxfp4(q.data(), want.data(), int64_t(kN));
        dequantize_row(JAL_DT_MXFP4, q.data(), got.data(), kN);
        for (size_t i = 0; i < kN; i++)
            if (!same_float(want[i], got[i])) {
                ADD_FAILURE() << "seed " << seed << " element " << i << " ggml " << want[i]
                              << " ours " << got[i];
                break;
            }
    }
}

TEST(NumericsGgml, QuantizeRowQ8_0Ref)
{
    REQUIRE_GGML();
    auto rows = input_rows(kN);
    std::vector<float> odd(kN);  // NaN and infinities in some blocks
    std::mt19937 rng(4);
    std::normal_distribution<float> d(0.0f, 3.0f);
    for (auto& v : odd) v = d(rng);
    odd[3] = NAN;
    odd[40] = INFINITY;
    odd[99] = -INFINITY;
    odd[100] = 1.0f;
    odd[140] = -NAN;
    odd[141] = 5.0f;
    rows.push_back(odd);
    for (size_t r = 0; r < rows.size(); r++) {
        std::vector<uint8_t> want(row_bytes(JAL_DT_Q8_0, kN)), got(want.size());
        ggml().quantize_q8_0(rows[r].data(), want.data(), int64_t(kN));
        quantize_row(JAL_DT_Q8_0, rows[r].data(), got.data(), kN, JAL_CVT_OCP);
        for (size_t b = 0; b < kN / 32; b++)
            if (std::memcmp(want.data() + 34 * b, got.data() + 34 * b, 34) != 0) {
                ADD_FAILURE() << "row " << r << " block " << b;
                break;
            }
    }
}

TEST(NumericsGgml, DequantizeRowQ8_0)
{
    REQUIRE_GGML();
    for (uint32_t seed = 1; seed <= 50; seed++) {
        std::mt19937 rng(seed);
        std::vector<uint8_t> q(row_bytes(JAL_DT_Q8_0, kN));
        for (auto& b : q) b = uint8_t(rng());
        std::vector<float> want(kN), got(kN);
        ggml().dequantize_q8_0(q.data(), want.data(), int64_t(kN));
        dequantize_row(JAL_DT_Q8_0, q.data(), got.data(), kN);
        for (size_t i = 0; i < kN; i++)
            if (!same_float(want[i], got[i])) {
                ADD_FAILURE() << "seed " << seed << " element " << i << " ggml " << want[i]
                              << " ours " << got[i];
                break;
            }
    }
}

TEST(NumericsGgml, F16Conversions)
{
    REQUIRE_GGML();
    for (uint32_t h = 0; h < 65536; h++)
        ASSERT_TRUE(same_float(ggml().fp16_to_fp32(uint16_t(h)), f16_to_f32(uint16_t(h)))) << h;
    std::mt19937 rng(11);
    for (int i = 0; i < 2000000; i++) {
        float f = from_bits(uint32_t(rng()));
        ASSERT_EQ(ggml().fp32_to_fp16(f), f32_to_f16(f)) << std::hexfloat << f;
    }
}

// mma with a Q8_0 and b MXFP4 (acc starting at 0) against ggml's vec_dot for every (m, n).
TEST(NumericsGgml, MxfpQ8_0DotProductEqualsVecDot)
{
    REQUIRE_GGML();
    ASSERT_NE(nullptr, ggml().vec_dot_mxfp4_q8_0);
    ASSERT_EQ(GGML_TYPE_Q8_0, ggml().vec_dot_type);
    const uint32_t M = 5, N = 23, K = 2880;
    for (uint32_t seed = 1; seed <= 12; seed++) {
        std::mt19937 rng(seed);
        auto rows = input_rows(K);
        // activations: rows of the input kinds, rounded to Q8_0 as llama.cpp does
        std::vector<uint8_t> a(M * row_bytes(JAL_DT_Q8_0, K)), b(N * row_bytes(JAL_DT_MXFP4, K));
        for (uint32_t m = 0; m < M; m++)
            ggml().quantize_q8_0(rows[(seed * 7 + m * 13) % rows.size()].data(),
                                 a.data() + m * row_bytes(JAL_DT_Q8_0, K), int64_t(K));
        // weights: random codes with scales around 1 (seed 12: every scale but 0xff)
        for (auto& v : b) v = uint8_t(rng());
        for (size_t blk = 0; blk < b.size() / 17; blk++)
            b[17 * blk] = seed == 12 ? uint8_t(blk % 255) : uint8_t(110 + rng() % 30);
        std::vector<float> acc(M * N, 0.0f);
        for (Isa isa : {Isa::scalar, Isa::avx2}) {
            force_isa(isa);
            std::fill(acc.begin(), acc.end(), 0.0f);
            ConstTile ta{a.data(), M, K, uint32_t(row_bytes(JAL_DT_Q8_0, K)), JAL_DT_Q8_0};
            ConstTile tb{b.data(), N, K, uint32_t(row_bytes(JAL_DT_MXFP4, K)), JAL_DT_MXFP4};
            ASSERT_EQ(JAL_STATUS_OK, mma(Tile{acc.data(), M, N, N * 4, JAL_DT_F32}, ta, tb));
            for (uint32_t m = 0; m < M; m++)
                for (uint32_t n = 0; n < N; n++) {
                    float want = 0;
                    ggml().vec_dot_mxfp4_q8_0(int(K), &want, 0,
                                              b.data() + n * row_bytes(JAL_DT_MXFP4, K), 0,
                                              a.data() + m * row_bytes(JAL_DT_Q8_0, K), 0, 1);
                    ASSERT_TRUE(same_float(want, acc[m * N + n]))
                        << "seed " << seed << " (" << m << "," << n << ") isa " << int(isa)
                        << ": ggml " << want << " ours " << acc[m * N + n];
                }
        }
        force_isa(best_isa());
    }
}

// mma with a and b Q8_0 (acc starting at 0) against ggml's vec_dot for Q8_0 weights (b is
// the weight, ggml's x; a the activation rounded to Q8_0, ggml's y) for every (m, n).
TEST(NumericsGgml, Q8_0DotProductEqualsVecDot)
{
    REQUIRE_GGML();
    ASSERT_NE(nullptr, ggml().vec_dot_q8_0);
    ASSERT_EQ(GGML_TYPE_Q8_0, ggml().vec_dot_type_q8_0);
    const uint32_t M = 5, N = 23, K = 2880;
    const size_t row = row_bytes(JAL_DT_Q8_0, K);
    const auto rows = input_rows(K);
    for (uint32_t seed = 1; seed <= 12; seed++) {
        std::mt19937 rng(seed);
        std::vector<uint8_t> a(M * row), b(N * row);
        for (uint32_t m = 0; m < M; m++)
            ggml().quantize_q8_0(rows[(seed * 7 + m * 13) % rows.size()].data(), a.data() + m * row,
                                 int64_t(K));
        if (seed % 2) {  // weights as llama.cpp quantizes them
            for (uint32_t n = 0; n < N; n++)
                ggml().quantize_q8_0(rows[(seed * 5 + n * 11) % rows.size()].data(),
                                     b.data() + n * row, int64_t(K));
        } else {  // any int8 (-128 included) with F16 scales of 2^-14 .. 2^1
            for (auto& v : b) v = uint8_t(rng());
            for (size_t blk = 0; blk < b.size() / 34; blk++) {
                const uint16_t d = uint16_t((1 + rng() % 16) << 10 | (rng() & 0x3ff));
                std::memcpy(b.data() + 34 * blk, &d, 2);
            }
        }
        for (Isa isa : {Isa::scalar, Isa::avx2}) {
            force_isa(isa);
            std::vector<float> acc(M * N, 0.0f);
            ConstTile ta{a.data(), M, K, uint32_t(row), JAL_DT_Q8_0};
            ConstTile tb{b.data(), N, K, uint32_t(row), JAL_DT_Q8_0};
            ASSERT_EQ(JAL_STATUS_OK, mma(Tile{acc.data(), M, N, N * 4, JAL_DT_F32}, ta, tb));
            for (uint32_t m = 0; m < M; m++)
                for (uint32_t n = 0; n < N; n++) {
                    float want = 0;
                    ggml().vec_dot_q8_0(int(K), &want, 0, b.data() + n * row, 0, a.data() + m * row,
                                        0, 1);
                    ASSERT_TRUE(same_float(want, acc[m * N + n]))
                        << "seed " << seed << " (" << m << "," << n << ") isa " << int(isa)
                        << ": ggml " << want << " ours " << acc[m * N + n];
                }
        }
        force_isa(best_isa());
    }
}

namespace {

// F16 rows: normal values of several scales, F16 subnormals, and small integers (whose
// partial sums are all exact, so every order of addition gives the same result).
std::vector<uint16_t> f16_row(uint32_t kind, uint32_t K, std::mt19937& rng)
{
    std::vector<uint16_t> r(K);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::uniform_int_distribution<int> q(-16, 16);
    for (auto& h : r) {
        float v = kind == 0   ? d(rng)
                  : kind == 1 ? d(rng) * 300.0f
                  : kind == 2 ? d(rng) * 0x1p-18f
                              : float(q(rng));
        h = ggml().fp32_to_fp16(v);
    }
    return r;
}

}  // namespace

// mma with a and b F16 against ggml's F16 vec_dot (llama.cpp's F16 weights meet activations
// rounded to F16). Every product of two F16 values is exact in F32; ggml adds them in its
// own order and precision, the matrix engine in a chain of K F32 roundings, so the two agree
// within (K + 2)·2^-24·Σ|a·b|, and exactly on integer rows.
TEST(NumericsGgml, F16DotProductAgreesWithVecDot)
{
    REQUIRE_GGML();
    ASSERT_NE(nullptr, ggml().vec_dot_f16);
    ASSERT_EQ(GGML_TYPE_F16, ggml().vec_dot_type_f16);
    const uint32_t M = 4, N = 19, K = 2880;
    for (uint32_t kind = 0; kind < 4; kind++) {
        std::mt19937 rng(100 + kind);
        std::vector<uint16_t> a, b;
        for (uint32_t m = 0; m < M; m++) {
            auto r = f16_row(kind, K, rng);
            a.insert(a.end(), r.begin(), r.end());
        }
        for (uint32_t n = 0; n < N; n++) {
            auto r = f16_row(kind == 2 ? 0 : kind, K, rng);
            b.insert(b.end(), r.begin(), r.end());
        }
        for (Isa isa : {Isa::scalar, Isa::avx2}) {
            force_isa(isa);
            std::vector<float> acc(M * N, 0.0f);
            ConstTile ta{a.data(), M, K, K * 2, JAL_DT_F16};
            ConstTile tb{b.data(), N, K, K * 2, JAL_DT_F16};
            ASSERT_EQ(JAL_STATUS_OK, mma(Tile{acc.data(), M, N, N * 4, JAL_DT_F32}, ta, tb));
            for (uint32_t m = 0; m < M; m++)
                for (uint32_t n = 0; n < N; n++) {
                    float want = 0;
                    ggml().vec_dot_f16(int(K), &want, 0, b.data() + size_t{n} * K, 0,
                                       a.data() + size_t{m} * K, 0, 1);
                    double mag = 0;
                    for (uint32_t k = 0; k < K; k++)
                        mag += std::fabs(double(f16_to_f32(a[size_t{m} * K + k])) *
                                         f16_to_f32(b[size_t{n} * K + k]));
                    const float got = acc[m * N + n];
                    if (kind == 3)
                        ASSERT_EQ(want, got) << "(" << m << "," << n << ") isa " << int(isa);
                    else
                        ASSERT_LE(std::fabs(double(want) - got), (K + 2) * 0x1p-24 * mag)
                            << "kind " << kind << " (" << m << "," << n << ") isa " << int(isa)
                            << ": ggml " << want << " ours " << got;
                }
        }
        force_isa(best_isa());
    }
}
