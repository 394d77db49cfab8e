// Argument words of the linear kernels, checked against their configurations: a tensor
// that does not match what the code was generated for is a host-side error, not a fault
// the device would find later (or never).
#include <jal/kernels/library/argmax.hpp>
#include <jal/kernels/library/collective.hpp>
#include <jal/kernels/library/embedding.hpp>
#include <jal/kernels/library/expert_gemm.hpp>
#include <jal/kernels/library/gemm.hpp>
#include <jal/kernels/library/quantize.hpp>

#include <jal/error.hpp>

#include "checks.hpp"

namespace jal::kernels::linear {

namespace {

using detail::require;

// Rows of t are packed: no stride given, or exactly row_bytes.
bool packed(const TensorRef& t, uint64_t row_bytes)
{
    return t.row_stride == 0 || t.row_stride == row_bytes;
}

void expect(const std::string& kernel, const char* what, const TensorRef& t, uint64_t rows,
            uint64_t cols, jal_dtype dt)
{
    if (t.va == 0 || t.rows != rows || t.cols != cols || t.dtype != dt ||
        packed_row_bytes(dt, t.cols) == 0 ||
        (t.row_stride != 0 && t.row_stride < packed_row_bytes(dt, t.cols)))
        throw Error(JAL_STATUS_INVALID_FIELD,
                    kernel + ": " + what + " must be " + std::to_string(rows) + "x" +
                        std::to_string(cols) + " of dtype " + std::to_string(dt) + " (got " +
                        std::to_string(t.rows) + "x" + std::to_string(t.cols) + " of dtype " +
                        std::to_string(t.dtype) + ")");
}

}  // namespace

uint64_t stride_of(const TensorRef& t)
{
    return t.row_stride ? t.row_stride : packed_row_bytes(t.dtype, t.cols);
}

std::vector<uint64_t> gemm_args(const GemmConfig& c, const TensorRef& x, uint64_t w_shards,
                                const TensorRef& w, const TensorRef& bias, const TensorRef& y,
                                const TensorRef& norm_weight)
{
    const std::string k = gemm_name(c);
    expect(k, "x", x, c.m, c.k, c.x_dtype);
    TensorRef wv = w;
    if (wv.va == 0) wv.va = 1;  // only its shape matters: rows are reached through the shard table
    expect(k, "w", wv, c.n, c.k, c.weight);
    expect(k, "y", y, c.m, c.n, JAL_DT_F32);
    require(w_shards != 0, k, "no shard table");
    std::vector<uint64_t> a{x.va, stride_of(x)};
    if (c.rms_norm) {
        expect(k, "norm_weight", norm_weight, 1, c.k, JAL_DT_F32);
        a.push_back(norm_weight.va);
    }
    a.insert(a.end(), {w_shards, c.w_kmajor ? packed_row_bytes(c.weight, 1) : stride_of(w)});
    if (c.bias) {
        expect(k, "bias", bias, 1, c.n, JAL_DT_F32);
        a.push_back(bias.va);
    } else {
        require(bias.va == 0, k, "a bias given to a kernel built without one");
    }
    a.insert(a.end(), {y.va, stride_of(y)});
    return a;
}

std::vector<uint64_t> quantize_args(const QuantizeConfig& c, const TensorRef& x,
                                    const TensorRef& out)
{
    const std::string k = quantize_name(c);
    expect(k, "x", x, c.m, c.k, JAL_DT_F32);
    expect(k, "out", out, c.m, c.k, c.out);
    return {x.va, stride_of(x), out.va, stride_of(out)};
}

std::vector<uint64_t> embedding_args(const EmbeddingConfig& c, const TensorRef& ids,
                                     const TensorRef& table, const TensorRef& out)
{
    const std::string k = embedding_name(c);
    expect(k, "ids", ids, c.tokens, 1, JAL_DT_I32);
    require(packed(ids, 4), k, "ids must be packed");
    expect(k, "table", table, c.vocab, c.dim, c.table);
    expect(k, "out", out, c.tokens, c.dim, JAL_DT_F32);
    return {ids.va, table.va, stride_of(table), out.va, stride_of(out)};
}

std::vector<uint64_t> argmax_args(const ArgmaxConfig& c, const TensorRef& logits,
                                  const TensorRef& out_index, const TensorRef& out_value)
{
    const std::string k = argmax_name(c);
    expect(k, "logits", logits, c.rows, c.vocab, JAL_DT_F32);
    expect(k, "out_index", out_index, c.rows, 1, JAL_DT_I32);
    expect(k, "out_value", out_value, c.rows, 1, JAL_DT_F32);
    require(packed(out_index, 4) && packed(out_value, 4), k, "outputs must be packed");
    return {logits.va, stride_of(logits), out_index.va, out_value.va};
}

std::vector<uint64_t> all_reduce_args(const AllReduceConfig& c, uint64_t vectors_table)
{
    require(vectors_table != 0, all_reduce_name(c), "no table of vectors");
    return {vectors_table};
}

std::vector<uint64_t> expert_gemm_args(const ExpertGemmConfig& c, const TensorRef& x,
                                       const TensorRef& ids, uint64_t w_shards, const TensorRef& w,
                                       const TensorRef& bias, const TensorRef& y,
                                       const TensorRef& norm_weight, const TensorRef& logits,
                                       const TensorRef& weights, const TensorRef& out,
                                       uint64_t next_w_shards)
{
    const std::string k = expert_gemm_name(c);
    const uint64_t pairs = uint64_t{c.tokens} * c.k;
    // With the fused SwiGLU of the input a row of x is gate | up.
    // What comes or goes as messages is not an argument (expert_gemm.hpp).
    const bool io = !c.recv_input, has_x = io && !c.recv_x, has_y = io && !c.send_output;
    if (has_x)
        expect(k, "x", x, c.input_per_pair ? pairs : c.tokens, c.swiglu_input ? 2 * c.kdim : c.kdim,
               c.x_dtype);
    if (io) {
        expect(k, "ids", ids, c.tokens, c.k, JAL_DT_I32);
        require(packed(ids, uint64_t{c.k} * 4), k, "ids must be packed");
    }
    if (has_y) expect(k, "y", y, pairs, c.out_cols(), c.y_dtype);
    TensorRef wv = w;
    if (wv.va == 0) wv.va = 1;
    expect(k, "w", wv, uint64_t{c.experts} * c.n, c.kdim, c.weight);
    require(w_shards != 0, k, "no shard table");
    std::vector<uint64_t> a;
    if (has_x) a.insert(a.end(), {x.va, stride_of(x)});
    if (c.rms_norm) {
        expect(k, "norm_weight", norm_weight, 1, c.kdim, JAL_DT_F32);
        a.push_back(norm_weight.va);
    }
    if (io) a.push_back(ids.va);
    if (c.route) {  // logits in, weights out
        expect(k, "weights", weights, c.tokens, c.k, JAL_DT_F32);
        require(packed(weights, uint64_t{c.k} * 4), k, "weights must be packed");
        if (!c.recv_logits) {
            expect(k, "logits", logits, c.tokens, c.experts, JAL_DT_F32);
            a.insert(a.end(), {logits.va, stride_of(logits)});
        }
        a.push_back(weights.va);
    }
    a.insert(a.end(), {w_shards, stride_of(w), stride_of(w) * c.n});
    if (c.bias) {
        expect(k, "bias", bias, c.experts, c.n, JAL_DT_F32);
        require(packed(bias, uint64_t{c.n} * 4), k, "bias must be packed");
        a.push_back(bias.va);
    }
    if (has_y) a.insert(a.end(), {y.va, stride_of(y)});
    if (c.combine) {  // out += Σ weights · y, per token
        expect(k, "out", out, c.tokens, c.n, JAL_DT_F32);
        a.insert(a.end(), {out.va, stride_of(out)});
        if (!c.recv_input) {  // received, the weights are in L1
            expect(k, "weights", weights, c.tokens, c.k, JAL_DT_F32);
            require(packed(weights, uint64_t{c.k} * 4), k, "weights must be packed");
            a.push_back(weights.va);
        }
    }
    if (c.prefetch_n) {
        require(next_w_shards != 0, k, "no shard table of the next kernel's W");
        a.push_back(next_w_shards);
    }
    return a;
}

std::vector<uint64_t> expert_shard_table(const ExpertGemmConfig& c, const TensorRef& w,
                                         uint32_t slices)
{
    std::vector<uint64_t> out(slices);
    for (uint32_t s = 0; s < slices; s++)
        out[s] = w.va + stride_of(w) * c.n * slice_range(c.experts, slices, s).begin;
    return out;
}

std::vector<uint64_t> expert_row_shard_table(const ExpertGemmConfig& c, const TensorRef& w,
                                             uint32_t slices)
{
    std::vector<uint64_t> out(slices);
    for (uint32_t s = 0; s < slices; s++)
        out[s] = w.va + stride_of(w) * c.experts * slice_range(c.n, slices, s).begin;
    return out;
}

std::vector<std::byte> pack_expert_rows(const ExpertGemmConfig& c, std::span<const std::byte> w,
                                        uint64_t row_bytes, uint32_t slices)
{
    require(w.size() == row_bytes * c.n * c.experts, expert_gemm_name(c),
            "weights to pack are not E·N rows");
    std::vector<std::byte> out(w.size());
    std::byte* at = out.data();
    for (uint32_t s = 0; s < slices; s++) {
        const Range r = slice_range(c.n, slices, s);
        require(!c.swiglu || (r.begin % 2 == 0 && r.size() % 2 == 0), expert_gemm_name(c),
                "the SwiGLU epilogue split by rows needs an even share of N on every slice");
        for (uint32_t e = 0; e < c.experts; e++) {
            const std::byte* expert = w.data() + uint64_t{e} * c.n * row_bytes;
            if (!c.swiglu) {  // rows [begin, end)
                const std::byte* src = expert + r.begin * row_bytes;
                at = std::copy(src, src + r.size() * row_bytes, at);
                continue;
            }
            // The halves: gate rows [begin/2, +size/2), then up rows N/2 + the same.
            for (uint64_t half : {uint64_t{0}, uint64_t{c.n / 2}}) {
                const std::byte* src = expert + (half + r.begin / 2) * row_bytes;
                at = std::copy(src, src + r.size() / 2 * row_bytes, at);
            }
        }
    }
    return out;
}

}  // namespace jal::kernels::linear
