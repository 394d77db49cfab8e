// The four collectives, composed of the communicator's steps (communicator_impl.hpp). A
// message larger than a staging slot goes in pieces, each a step (two for all-reduce).
#include "communicator_impl.hpp"

#include <jal/error.hpp>

#include <algorithm>
#include <string>

namespace jal::collectives {

namespace {

void require_float(jal_dtype dtype, const char* what)
{
    if (dtype != JAL_DT_F32 && dtype != JAL_DT_BF16 && dtype != JAL_DT_F16)
        throw Error(JAL_STATUS_INVALID_FIELD, std::string(what) +
                                                  ": reductions take F32, BF16 or F16, not dtype " +
                                                  std::to_string(dtype));
}

}  // namespace

void Communicator::all_reduce(uint32_t rank, uint64_t send, uint64_t recv, uint64_t count,
                              jal_dtype dtype, jal_signal_t done)
{
    Impl& m = *impl_;
    m.at(rank);
    require_float(dtype, "all_reduce");
    const uint64_t es = element_bytes(dtype), n = m.size(), slot = m.slot_bytes / es;
    Chain chain;
    std::vector<Outgoing> out(n);
    std::vector<uint64_t> inputs(n);
    // A piece of n·slot elements: chunk j (ceil(piece / n) elements) is reduced on rank j,
    // then every rank gathers the reduced chunks.
    for (uint64_t off = 0; off < count; off += n * slot) {
        const uint64_t piece = std::min(n * slot, count - off), chunk = (piece + n - 1) / n;
        auto first = [&](uint64_t j) { return off + std::min(j * chunk, piece); };
        auto len = [&](uint64_t j) { return std::min(chunk, piece - std::min(j * chunk, piece)); };
        for (uint64_t j = 0; j < n; ++j) out[j] = {send + first(j) * es, len(j) * es};
        const uint64_t staged = m.exchange(rank, out, chain);
        if (len(rank)) {
            for (uint64_t k = 0; k < n; ++k)
                inputs[k] = k == rank ? send + first(rank) * es : staged + k * m.slot_bytes;
            m.reduce(rank, inputs, recv + first(rank) * es, static_cast<uint32_t>(len(rank)), dtype,
                     chain);
        }
        for (uint64_t j = 0; j < n; ++j) out[j] = {recv + first(rank) * es, len(rank) * es};
        const uint64_t gathered = m.exchange(rank, out, chain);
        for (uint64_t j = 0; j < n; ++j)
            if (j != rank)
                m.copy(rank, recv + first(j) * es, gathered + j * m.slot_bytes, len(j) * es, chain);
    }
    m.finish(rank, done, chain);
}

void Communicator::reduce_scatter(uint32_t rank, uint64_t send, uint64_t recv, uint64_t recv_count,
                                  jal_dtype dtype, jal_signal_t done)
{
    Impl& m = *impl_;
    m.at(rank);
    require_float(dtype, "reduce_scatter");
    const uint64_t es = element_bytes(dtype), n = m.size(), slot = m.slot_bytes / es;
    Chain chain;
    std::vector<Outgoing> out(n);
    std::vector<uint64_t> inputs(n);
    for (uint64_t off = 0; off < recv_count; off += slot) {
        const uint64_t len = std::min(slot, recv_count - off);
        for (uint64_t j = 0; j < n; ++j) out[j] = {send + (j * recv_count + off) * es, len * es};
        const uint64_t staged = m.exchange(rank, out, chain);
        for (uint64_t k = 0; k < n; ++k)
            inputs[k] = k == rank ? out[rank].src : staged + k * m.slot_bytes;
        m.reduce(rank, inputs, recv + off * es, static_cast<uint32_t>(len), dtype, chain);
    }
    m.finish(rank, done, chain);
}

// Block j of the send side (at j·send_stride elements) goes to rank j, whose recv block
// `rank` it becomes; count elements a block, in pieces of a staging slot.
void Communicator::Impl::blocks(uint32_t rank, uint64_t send, uint64_t send_stride, uint64_t recv,
                                uint64_t count, jal_dtype dtype, jal_signal_t done)
{
    const uint64_t es = element_bytes(dtype), n = size(), slot = slot_bytes / es;
    Chain chain;
    std::vector<Outgoing> out(n);
    for (uint64_t off = 0; off < count; off += slot) {
        const uint64_t len = std::min(slot, count - off);
        for (uint64_t j = 0; j < n; ++j) out[j] = {send + (j * send_stride + off) * es, len * es};
        const uint64_t staged = exchange(rank, out, chain);
        for (uint64_t j = 0; j < n; ++j)
            copy(rank, recv + (j * count + off) * es,
                 j == rank ? out[rank].src : staged + j * slot_bytes, len * es, chain);
    }
    finish(rank, done, chain);
}

void Communicator::all_gather(uint32_t rank, uint64_t send, uint64_t recv, uint64_t send_count,
                              jal_dtype dtype, jal_signal_t done)
{
    impl_->at(rank);
    impl_->blocks(rank, send, 0, recv, send_count, dtype, done);  // every rank gets the same
}

void Communicator::all_to_all(uint32_t rank, uint64_t send, uint64_t recv, uint64_t count,
                              jal_dtype dtype, jal_signal_t done)
{
    impl_->at(rank);
    impl_->blocks(rank, send, count, recv, count, dtype, done);
}

}  // namespace jal::collectives
