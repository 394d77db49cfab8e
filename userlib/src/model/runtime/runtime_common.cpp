#include "runtime_common.hpp"

#include <fmt/format.h>

#include <jal/jal.hpp>

namespace jal::model::detail {

jal_dtype chip_dtype(TensorType t, std::string_view name)
{
    switch (t) {
    case TensorType::F32:
        return JAL_DT_F32;
    case TensorType::BF16:
        return JAL_DT_BF16;
    case TensorType::F16:
        return JAL_DT_F16;
    case TensorType::MXFP4:
        return JAL_DT_MXFP4;
    case TensorType::Q8_0:
        return JAL_DT_Q8_0;
    default:
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: tensor '{}' is {}, which the chip's kernels "
                                "do not take (F32, BF16, F16, MXFP4, Q8_0)",
                                name, tensor_type_name(t)));
    }
}

ChipTotals batch_totals(const jal::kernels::BatchReport& r,
                        std::map<std::string, ChipTotals>& by_kernel)
{
    ChipTotals totals;
    totals.modelled_ns = r.modelled_ns;  // lanes: each region's slowest
    for (const jal::kernels::BatchReport::Dispatch& d : r.dispatches) {
        ChipTotals one;
        one.dispatches = 1;
        one.modelled_ns = d.report.modelled_ns;
        one.energy_nj = d.report.energy_nj;
        one.flops = d.report.flops;
        one.hbm_bytes = d.report.hbm_bytes;
        one.instructions = d.report.instructions;
        by_kernel[d.label] += one;
        one.modelled_ns = 0;
        totals += one;
    }
    return totals;
}

ChipTotals tray_exchange(const RuntimeOptions& o, uint32_t n_layer, uint64_t row_bytes,
                         uint32_t rows, uint32_t out_rows)
{
    ChipTotals t;
    if (o.tray_chips <= 1 || !o.tray_allreduce_ns) return t;
    t.exchange_ns = 2 * uint64_t{n_layer} * o.tray_allreduce_ns(row_bytes * rows) +
                    o.tray_allreduce_ns(uint64_t{out_rows} * 8);
    t.modelled_ns = t.exchange_ns;
    return t;
}

const jal::kernels::Program& cached_program(ProgramCache& programs, const std::string& key,
                                            const std::function<jal::kernels::CodeObject()>& build,
                                            const runtime::Device& device,
                                            runtime::Context& context, runtime::Queue& queue,
                                            uint64_t all_mask)
{
    auto it = programs.find(key);
    if (it == programs.end())
        it = programs
                 .emplace(key, std::make_unique<jal::kernels::Program>(
                                   device, context, queue, build(),
                                   jal::kernels::MemoryPlace{JAL_PLACE_INTERLEAVED, all_mask}))
                 .first;
    return *it->second;
}

jal::kernels::DispatchOptions graph_dispatch(uint64_t mask, bool timing_only, const char* what,
                                             int lane)
{
    jal::kernels::DispatchOptions d;
    d.slice_mask = mask;
    d.timing_only = timing_only;
    d.label = what;
    d.lane = lane;
    return d;
}

void check_prompt(int seq, uint32_t len, std::span<const int32_t> tokens, uint32_t n_ctx,
                  uint32_t n_vocab)
{
    if (tokens.empty())
        throw Error(JAL_STATUS_INVALID_FIELD, "model runtime: prefill needs at least one token");
    if (len + tokens.size() > n_ctx)
        throw Error(JAL_STATUS_OUT_OF_RANGE,
                    fmt::format("model runtime: sequence {} would hold {} positions, its cache "
                                "holds {}",
                                seq, len + tokens.size(), n_ctx));
    for (int32_t t : tokens)
        if (t < 0 || static_cast<uint32_t>(t) >= n_vocab)
            throw Error(JAL_STATUS_OUT_OF_RANGE,
                        fmt::format("model runtime: token {} is not in the vocabulary (0..{})", t,
                                    n_vocab - 1));
}

void check_decode_step(size_t rows, uint32_t max_rows)
{
    if (rows > max_rows)
        throw Error(
            JAL_STATUS_INVALID_FIELD,
            fmt::format("model runtime: {} sequences in one step, at most {}", rows, max_rows));
}

void check_decode_row(int seq, uint32_t len, bool twice, uint32_t n_ctx)
{
    if (twice)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: sequence {} twice in one step", seq));
    if (len + 1 > n_ctx)
        throw Error(JAL_STATUS_OUT_OF_RANGE,
                    fmt::format("model runtime: sequence {} is full ({} positions)", seq, n_ctx));
}

std::vector<std::vector<float>> split_rows(const std::vector<float>& logits, uint32_t rows,
                                           uint32_t vocab)
{
    std::vector<std::vector<float>> out(rows);
    for (uint32_t b = 0; b < rows; b++)
        out[b].assign(logits.begin() + size_t{b} * vocab, logits.begin() + size_t{b + 1} * vocab);
    return out;
}

std::vector<std::vector<int32_t>>
greedy_on_host(Runtime& rt, std::span<const std::pair<int, int32_t>> batch, uint32_t steps,
               const std::function<void(std::span<const int32_t>)>& on_step, ChipTotals& last)
{
    std::vector<std::pair<int, int32_t>> rows(batch.begin(), batch.end());
    std::vector<std::vector<int32_t>> out;
    ChipTotals sum;
    for (uint32_t s = 0; s < steps; s++) {
        const std::vector<std::vector<float>> logits = rt.decode(rows);
        sum += rt.last();
        std::vector<int32_t> chosen;
        for (size_t i = 0; i < rows.size(); i++)
            chosen.push_back(rows[i].second = argmax(logits[i]));
        if (on_step) on_step(chosen);
        out.push_back(std::move(chosen));
    }
    last = sum;
    return out;
}

}  // namespace jal::model::detail
