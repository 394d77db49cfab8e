// MMA: acc (F32, M x N) += a (M x K) x b^T (or x b, b K-major). Validation, the two
// semantics in plain scalar code, and the dispatch to the vector kernels (mma_avx2.cpp,
// mma_kmajor.cpp), which give the same bits.
#include <jal/isa/tile_math.hpp>

#include "bits.hpp"
#include "kernels.hpp"

#include <cmath>
#include <cstring>
#include <vector>

namespace jal::numerics {

namespace {

bool allowed_a(jal_dtype dt)
{
    switch (dt) {
    case JAL_DT_F32:
    case JAL_DT_BF16:
    case JAL_DT_F16:
    case JAL_DT_MXFP8_E4M3:
    case JAL_DT_MXFP8_E5M2:
    case JAL_DT_MXFP4:
    case JAL_DT_Q8_0:
        return true;
    default:
        return false;
    }
}

bool allowed_b(jal_dtype dt, jal_dtype a)
{
    switch (dt) {
    case JAL_DT_F32:
    case JAL_DT_BF16:
    case JAL_DT_F16:
    case JAL_DT_MXFP8_E4M3:
    case JAL_DT_MXFP8_E5M2:
    case JAL_DT_MXFP4:
        return true;
    case JAL_DT_Q8_0:
        return a == JAL_DT_Q8_0;
    default:
        return false;
    }
}

// Footprint of a tile in bytes: it must fit a slice's L1.
bool fits_l1(uint32_t rows, uint32_t stride, size_t row_len)
{
    if (rows == 0) return true;
    return uint64_t(rows - 1) * stride + row_len <= JAL_SLICE_L1_BYTES;
}

jal_status fail(std::string* error, const char* msg)
{
    if (error) *error = msg;
    return JAL_STATUS_INVALID_FIELD;
}

size_t footprint(uint32_t rows, uint32_t stride, size_t row_len)
{
    return rows == 0 ? 0 : size_t(rows - 1) * stride + row_len;
}

bool overlaps(const void* p, size_t n, const void* q, size_t m)
{
    auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(q);
    return n && m && a < b + m && b < a + n;
}

bool is_blockdot(const ConstTile& a, const ConstTile& b)
{
    return a.dtype == JAL_DT_Q8_0 && (b.dtype == JAL_DT_MXFP4 || b.dtype == JAL_DT_Q8_0);
}

// Every NaN an MMA produces is the canonical quiet NaN, whatever produced it.
void canonicalize_nans(const Tile& acc)
{
    for (uint32_t m = 0; m < acc.rows; m++) {
        unsigned char* row = static_cast<unsigned char*>(acc.data) + size_t(m) * acc.stride;
        for (uint32_t n = 0; n < acc.cols; n++) {
            uint32_t u;
            std::memcpy(&u, row + 4 * n, 4);
            if ((u & 0x7fffffffu) > 0x7f800000u) {
                u = kCanonicalNaN;
                std::memcpy(row + 4 * n, &u, 4);
            }
        }
    }
}

void run_mma(const Tile& acc, const ConstTile& a, const ConstTile& b, bool kmajor);

bool element_format(jal_dtype dt)
{
    return dt == JAL_DT_F32 || dt == JAL_DT_BF16 || dt == JAL_DT_F16;
}

// mma and mma_kmajor: b holds N rows of K, or (kmajor) K rows of N.
jal_status checked_mma(const Tile& acc, const ConstTile& a, const ConstTile& b, bool kmajor,
                       std::string* error)
{
    if (acc.dtype != JAL_DT_F32) return fail(error, "mma: the accumulator must be F32");
    if (!allowed_a(a.dtype)) return fail(error, "mma: a's dtype is not a matrix input");
    if (!allowed_b(b.dtype, a.dtype))
        return fail(error, "mma: b's dtype is not a matrix input with this a");
    if (kmajor && !element_format(b.dtype))
        return fail(error, "mma: a K-major b must be F32, BF16 or F16");
    const uint32_t b_n = kmajor ? b.cols : b.rows, b_k = kmajor ? b.rows : b.cols;
    if (acc.rows != a.rows || acc.cols != b_n)
        return fail(error, kmajor ? "mma: acc must be a.rows x b.cols (b K-major)"
                                  : "mma: acc must be a.rows x b.rows");
    if (a.cols != b_k)
        return fail(error, kmajor ? "mma: a's columns must be b's rows (K; b K-major)"
                                  : "mma: a and b must have the same number of columns (K)");
    size_t a_row = row_bytes(a.dtype, a.cols), b_row = row_bytes(b.dtype, b.cols);
    if (a.cols == 0 || a_row == 0 || b_row == 0)
        return fail(error, "mma: K must be positive and a multiple of 32 for block formats");
    size_t acc_row_len = size_t(acc.cols) * 4;
    if ((acc.rows > 1 && acc.stride < acc_row_len) || (a.rows > 1 && a.stride < a_row) ||
        (b.rows > 1 && b.stride < b_row))
        return fail(error, "mma: a row stride is shorter than the row");
    if (!fits_l1(acc.rows, acc.stride, acc_row_len) || !fits_l1(a.rows, a.stride, a_row) ||
        !fits_l1(b.rows, b.stride, b_row))
        return fail(error, "mma: a tile does not fit in L1 (4 MiB)");
    if (acc.rows == 0 || acc.cols == 0) return JAL_STATUS_OK;
    if (!acc.data || !a.data || !b.data) return fail(error, "mma: null tile data");
    // An input that shares memory with acc is read as it was before the instruction (a
    // copy), so the result does not depend on the order in which a code path writes acc.
    const size_t acc_len = footprint(acc.rows, acc.stride, acc_row_len);
    std::vector<unsigned char> a_copy, b_copy;
    ConstTile ra = a, rb = b;
    const size_t a_len = footprint(a.rows, a.stride, a_row),
                 b_len = footprint(b.rows, b.stride, b_row);
    if (overlaps(acc.data, acc_len, a.data, a_len)) {
        a_copy.assign(static_cast<const unsigned char*>(a.data),
                      static_cast<const unsigned char*>(a.data) + a_len);
        ra.data = a_copy.data();
    }
    if (overlaps(acc.data, acc_len, b.data, b_len)) {
        b_copy.assign(static_cast<const unsigned char*>(b.data),
                      static_cast<const unsigned char*>(b.data) + b_len);
        rb.data = b_copy.data();
    }
    run_mma(acc, ra, rb, kmajor);
    return JAL_STATUS_OK;
}

}  // namespace

jal_status mma(const Tile& acc, const ConstTile& a, const ConstTile& b, std::string* error)
{
    return checked_mma(acc, a, b, false, error);
}

jal_status mma_kmajor(const Tile& acc, const ConstTile& a, const ConstTile& b, std::string* error)
{
    return checked_mma(acc, a, b, true, error);
}

namespace {

void run_mma(const Tile& acc, const ConstTile& a, const ConstTile& b, bool kmajor)
{
    const Isa isa = active_isa();
    const bool avx2 = isa != Isa::scalar;
    if (kmajor)
        (isa == Isa::avx512 ? mma_kmajor_avx512
         : avx2             ? mma_kmajor_avx2
                            : mma_kmajor_scalar)(acc, a, b);
    else if (is_blockdot(a, b))
        (avx2 ? mma_blockdot_avx2 : mma_blockdot_scalar)(acc, a, b);
    else
        (avx2 ? mma_fma_avx2 : mma_fma_scalar)(acc, a, b);
    canonicalize_nans(acc);
}

}  // namespace

namespace {
constexpr int8_t kValuesMxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
}  // namespace

void mma_blockdot_scalar(const Tile& acc, const ConstTile& a, const ConstTile& b)
{
    const size_t nb = a.cols / 32;
    const bool b_mxfp4 = b.dtype == JAL_DT_MXFP4;
    std::vector<float> row(acc.cols);
    for (uint32_t m = 0; m < acc.rows; m++) {
        unsigned char* out = acc_row(acc, m);
        std::memcpy(row.data(), out, row.size() * 4);
        auto* xa = reinterpret_cast<const jal_block_q8_0*>(tile_at(a, m, 0));
        for (uint32_t n = 0; n < acc.cols; n++) {
            float s = row[n];
            for (size_t j = 0; j < nb; j++) {
                jal_block_q8_0 qa;
                std::memcpy(&qa, xa + j, sizeof qa);
                int32_t isum = 0;
                float d;
                if (b_mxfp4) {
                    jal_block_mxfp4 qb;
                    std::memcpy(&qb, tile_at(b, n, 0) + j * sizeof qb, sizeof qb);
                    for (int i = 0; i < 16; i++) {
                        isum += qa.qs[i] * kValuesMxfp4[qb.qs[i] & 0xf];
                        isum += qa.qs[i + 16] * kValuesMxfp4[qb.qs[i] >> 4];
                    }
                    d = e8m0_to_f32_half(qb.e) * f16_to_f32(qa.d);
                } else {
                    jal_block_q8_0 qb;
                    std::memcpy(&qb, tile_at(b, n, 0) + j * sizeof qb, sizeof qb);
                    for (int i = 0; i < 32; i++) isum += qa.qs[i] * qb.qs[i];
                    d = f16_to_f32(qb.d) * f16_to_f32(qa.d);
                }
                const float t = d * float(isum);
                s = s + t;
            }
            row[n] = s;
        }
        std::memcpy(out, row.data(), row.size() * 4);
    }
}

void mma_fma_scalar(const Tile& acc, const ConstTile& a, const ConstTile& b)
{
    const size_t K = a.cols;
    std::vector<float> bf(size_t(b.rows) * K), af(K), row(acc.cols);
    for (uint32_t n = 0; n < b.rows; n++)
        dequantize_row(b.dtype, tile_at(b, n, 0), bf.data() + n * K, K);
    for (uint32_t m = 0; m < acc.rows; m++) {
        dequantize_row(a.dtype, tile_at(a, m, 0), af.data(), K);
        unsigned char* out = acc_row(acc, m);
        std::memcpy(row.data(), out, row.size() * 4);
        for (uint32_t n = 0; n < acc.cols; n++) {
            const float* bn = bf.data() + n * K;
            float s = row[n];
            for (size_t k = 0; k < K; k++) s = std::fma(af[k], bn[k], s);
            row[n] = s;
        }
        std::memcpy(out, row.data(), row.size() * 4);
    }
}

}  // namespace jal::numerics
