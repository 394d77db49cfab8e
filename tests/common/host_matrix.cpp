#include "common/host_matrix.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace jal::test {

using jal::model::TensorType;

namespace {

constexpr double kE2M1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};

double f32_at(const std::byte* p)
{
    float f;
    std::memcpy(&f, p, 4);
    return f;
}

double f16_at(const std::byte* p)
{
    _Float16 h;
    std::memcpy(&h, p, 2);
    return static_cast<double>(h);
}

double bf16_at(const std::byte* p)
{
    uint16_t b;
    std::memcpy(&b, p, 2);
    const uint32_t u = uint32_t{b} << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

void decode_mxfp4(const std::byte* data, std::vector<double>& w)
{
    // ggml's block_mxfp4: {e8m0 scale, 16 bytes}; element j in the low nibble of qs[j],
    // element j + 16 in the high nibble; value = E2M1 × 2^(e − 127).
    const auto* p = reinterpret_cast<const uint8_t*>(data);
    for (size_t b = 0; b < w.size() / 32; b++, p += 17) {
        const double scale = std::ldexp(1.0, int(p[0]) - 127);
        for (int j = 0; j < 16; j++) {
            const uint8_t lo = p[1 + j] & 15, hi = p[1 + j] >> 4;
            w[b * 32 + j] = (lo & 8 ? -1 : 1) * kE2M1[lo & 7] * scale;
            w[b * 32 + j + 16] = (hi & 8 ? -1 : 1) * kE2M1[hi & 7] * scale;
        }
    }
}

// Activations as llama.cpp converts them to F16 / BF16 (round to nearest even).
void round_f16(std::vector<double>& x)
{
    for (double& v : x) v = static_cast<double>(static_cast<_Float16>(static_cast<float>(v)));
}

void round_bf16(std::vector<double>& x)
{
    for (double& v : x) {
        const float f = static_cast<float>(v);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;  // ggml_compute_fp32_to_bf16
        float r;
        std::memcpy(&r, &u, 4);
        v = r;
    }
}

}  // namespace

void round_to_q8_0(std::vector<double>& x)
{
    // Per 32 values, d = amax / 127 stored as F16, q = round(x · 127 / amax).
    for (size_t b = 0; b + 32 <= x.size(); b += 32) {
        float amax = 0;
        for (size_t i = 0; i < 32; i++)
            amax = std::max(amax, std::fabs(static_cast<float>(x[b + i])));
        const float d = amax / 127.0f;
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        const double dh = static_cast<double>(static_cast<_Float16>(d));
        for (size_t i = 0; i < 32; i++)
            x[b + i] = std::nearbyint(static_cast<float>(x[b + i]) * id) * dh;
    }
}

std::vector<double> load_host_vector(const jal::model::GgufFile& file, const std::string& name)
{
    const auto& t = file.tensor(name);
    if (t.type != TensorType::F32) throw std::runtime_error(name + ": expected F32");
    std::vector<double> out(t.n_elements);
    for (size_t i = 0; i < out.size(); i++) out[i] = f32_at(t.data.data() + 4 * i);
    return out;
}

HostMatrix load_host_matrix(const jal::model::GgufFile& file, const std::string& name)
{
    const auto& t = file.tensor(name);
    HostMatrix m;
    m.cols = static_cast<uint32_t>(t.ne[0]);
    m.rows = static_cast<uint32_t>(t.ne[1]);
    m.slices = t.n_dims == 3 ? static_cast<uint32_t>(t.ne[2]) : 0;
    m.w.resize(t.n_elements);
    m.type = t.type;
    const std::byte* p = t.data.data();
    switch (t.type) {
    case TensorType::F32:
        for (size_t i = 0; i < m.w.size(); i++) m.w[i] = f32_at(p + 4 * i);
        break;
    case TensorType::F16:
        for (size_t i = 0; i < m.w.size(); i++) m.w[i] = f16_at(p + 2 * i);
        break;
    case TensorType::BF16:
        for (size_t i = 0; i < m.w.size(); i++) m.w[i] = bf16_at(p + 2 * i);
        break;
    case TensorType::Q8_0:
        // ggml's block_q8_0: {F16 scale d, 32 int8 q}; value = q × d.
        for (size_t b = 0; b < m.w.size() / 32; b++, p += 34)
            for (int j = 0; j < 32; j++)
                m.w[b * 32 + j] = static_cast<int8_t>(p[2 + j]) * f16_at(p);
        break;
    case TensorType::MXFP4:
        decode_mxfp4(p, m.w);
        break;
    default:
        throw std::runtime_error(name + ": the host pass reads F32, F16, BF16, Q8_0, MXFP4 only");
    }
    return m;
}

std::vector<double> host_matvec(const HostMatrix& m, const std::vector<double>& x_in,
                                bool ggml_numerics, uint32_t slice)
{
    std::vector<double> x = x_in;
    if (m.type == TensorType::Q8_0 || (ggml_numerics && m.type == TensorType::MXFP4))
        round_to_q8_0(x);
    if (ggml_numerics && m.type == TensorType::F16) round_f16(x);
    if (ggml_numerics && m.type == TensorType::BF16) round_bf16(x);
    std::vector<double> y(m.rows);
    const double* w = m.w.data() + size_t{slice} * m.rows * m.cols;
    for (uint32_t r = 0; r < m.rows; r++) {
        double s = 0;
        for (uint32_t c = 0; c < m.cols; c++) s += w[size_t{r} * m.cols + c] * x[c];
        y[r] = s;
    }
    return y;
}

}  // namespace jal::test
