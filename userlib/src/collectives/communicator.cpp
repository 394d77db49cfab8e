// Communicator setup (each rank's window allocated, exported and mapped by every peer) and
// the steps collectives are made of (communicator_impl.hpp).
#include "communicator_impl.hpp"

#include <jal/error.hpp>
#include <jal/kernels/library/collective.hpp>

#include <algorithm>
#include <cstring>
#include <string>

#include "../runtime/c_api_support.hpp"

namespace jal::collectives {

namespace {

using Mem = Communicator::Impl::Mem;
constexpr uint64_t kSlotAlign = 64 << 10;
constexpr uint64_t kMaxSlot = 256ull << 20;  // keeps a slot's elements in the kernel's u32
constexpr uint32_t kMaxRanks = Communicator::Impl::kFlagBytes / 8;

uint64_t default_mask(jal_device_t dev)
{
    jal_identify id{};
    runtime::check(jal_device_identify(dev, &id));
    const uint32_t n = std::min(id.slices_enabled, 8u);
    return (uint64_t{1} << n) - 1;
}

uint64_t lowest_slice(uint64_t mask)
{
    return mask & (~mask + 1);
}

uint32_t timeout_us(std::chrono::microseconds t)
{
    return static_cast<uint32_t>(std::clamp<int64_t>(t.count(), 1, UINT32_MAX));
}

Mem info_of(jal_mem_t h)
{
    Mem m;
    m.h = runtime::Handle<jal_mem_t, jal_mem_free>(h);
    jal_mem_info_t info{};
    info.struct_size = sizeof info;
    runtime::check(jal_mem_get_info(h, &info));
    m.va = info.va;
    return m;
}

Mem allocate(jal_context_t ctx, uint64_t bytes, jal_placement placement, uint64_t mask)
{
    jal_mem_t h = nullptr;
    runtime::check(jal_mem_alloc(ctx, bytes, placement, mask, 0, &h));
    return info_of(h);
}

// Copies `bytes` from the host to device address `va` through `queue`, and waits.
void upload(jal_device_t dev, jal_queue_t queue, uint64_t va, const void* data, uint64_t bytes)
{
    jal_host_buffer_t host = nullptr;
    runtime::check(jal_host_alloc(dev, bytes, &host));
    runtime::Handle<jal_host_buffer_t, jal_host_free> host_h(host);
    void* ptr = nullptr;
    uint64_t bus = 0;
    runtime::check(jal_host_buffer_info(host, &ptr, &bus, nullptr));
    std::memcpy(ptr, data, bytes);
    jal_signal_t done = nullptr;
    runtime::check(jal_signal_create(dev, 1, JAL_SIGNAL_INTERRUPT, &done));
    runtime::Handle<jal_signal_t, jal_signal_destroy> done_h(done);
    runtime::check(jal_queue_copy(queue, JAL_COPY_H2D, va, bus, bytes, done));
    uint32_t status = 0;
    runtime::check(jal_signal_wait(done, JAL_SIGNAL_EQ, 0, 60'000'000'000ull, JAL_WAIT_HYBRID,
                                   nullptr, &status));
    if (status != JAL_STATUS_OK)
        throw Error(static_cast<jal_status>(status), "collectives: an upload to the device failed");
}

}  // namespace

uint32_t element_bytes(jal_dtype dtype)
{
    switch (dtype) {
    case JAL_DT_F32:
    case JAL_DT_I32:
        return 4;
    case JAL_DT_BF16:
    case JAL_DT_F16:
        return 2;
    default:
        throw Error(JAL_STATUS_INVALID_FIELD, "collectives: dtype " + std::to_string(dtype) +
                                                  " is not F32, BF16, F16 or I32");
    }
}

Communicator::Communicator(std::vector<Rank> ranks, const Options& options)
    : impl_(std::make_unique<Impl>())
{
    Impl& m = *impl_;
    m.options = options;
    if (ranks.empty() || ranks.size() > kMaxRanks)
        throw Error(JAL_STATUS_INVALID_FIELD, "a communicator has 1.." + std::to_string(kMaxRanks) +
                                                  " ranks, not " + std::to_string(ranks.size()));
    if (options.staging_bytes > kMaxSlot)
        throw Error(JAL_STATUS_INVALID_FIELD, "staging_bytes " +
                                                  std::to_string(options.staging_bytes) +
                                                  " is more than 256 MiB a peer");
    m.slot_bytes = std::max<uint64_t>(
        (options.staging_bytes + kSlotAlign - 1) / kSlotAlign * kSlotAlign, kSlotAlign);
    m.ranks.reserve(ranks.size());
    for (const Rank& r : ranks) {
        if (!r.device || !r.context || !r.queue)
            throw Error(JAL_STATUS_INVALID_FIELD, "a rank without its device, context or queue");
        Impl::RankState& s = m.ranks.emplace_back(r);
        s.slice_mask = options.slice_mask ? options.slice_mask : default_mask(r.device);
    }
    // Windows: allocated, flags zeroed, exported.
    std::vector<jal_peer_export_t> exports;
    const std::vector<std::byte> zeros(Impl::kFlagBytes);
    for (Impl::RankState& s : m.ranks) {
        s.window = allocate(s.rank.context, m.window_bytes(), JAL_PLACE_INTERLEAVED, s.slice_mask);
        s.scratch = allocate(s.rank.context, Impl::kScratchBytes, JAL_PLACE_SLICE,
                             lowest_slice(s.slice_mask));
        jal_queue_t q = nullptr;
        runtime::check(jal_queue_create(s.rank.context, 64, 0, &q));
        s.upload = runtime::Handle<jal_queue_t, jal_queue_destroy>(q);
        upload(s.rank.device, q, s.window.va, zeros.data(), zeros.size());
        if (m.size() == 1) break;  // no peer: nothing to export (a chip without ports cannot)
        jal_peer_export_t e{};
        e.struct_size = sizeof e;
        runtime::check(jal_mem_export(s.window.h.get(), 0, m.window_bytes(), &e));
        exports.push_back(e);
    }
    // Every rank maps every peer's window in its own context.
    for (uint32_t i = 0; i < m.size(); ++i) {
        Impl::RankState& s = m.ranks[i];
        s.peers.resize(m.size());
        for (uint32_t j = 0; j < m.size(); ++j) {
            if (j == i) continue;
            jal_mem_t h = nullptr;
            runtime::check(jal_peer_import(s.rank.context, &exports[j], &h));
            s.peers[j] = info_of(h);
        }
    }
}

Communicator::~Communicator() = default;

uint32_t Communicator::size() const
{
    return impl_->size();
}

Communicator::Impl::RankState& Communicator::Impl::at(uint32_t rank)
{
    if (rank >= ranks.size())
        throw Error(JAL_STATUS_INVALID_FIELD, "rank " + std::to_string(rank) +
                                                  " is not in a communicator of " +
                                                  std::to_string(ranks.size()));
    return ranks[rank];
}

uint64_t Communicator::Impl::exchange(uint32_t r, std::span<const Outgoing> out, Chain& chain)
{
    RankState& s = ranks[r];
    const uint64_t buffer = kFlagBytes + (s.step % 2) * size() * slot_bytes;
    const uint64_t flag = s.step + 1;
    for (uint32_t j = 0; j < size(); ++j)
        if (j != r && out[j].bytes)
            s.queue().copy(JAL_COPY_D2D, s.peers[j].va + buffer + r * slot_bytes, out[j].src,
                           out[j].bytes, nullptr, chain.next());
    for (uint32_t j = 0; j < size(); ++j)
        if (j != r) s.queue().write_value(s.peers[j].va + r * 8, flag, nullptr, chain.next());
    for (uint32_t j = 0; j < size(); ++j)
        if (j != r)
            s.queue().wait_value(s.window.va + j * 8, JAL_VALUE_GE, flag,
                                 timeout_us(options.timeout), nullptr, chain.next());
    ++s.step;
    return s.window.va + buffer;
}

uint64_t Communicator::Impl::program(RankState& s, uint32_t inputs, uint32_t length,
                                     jal_dtype dtype)
{
    Mem& p = s.programs[{inputs, length, static_cast<int>(dtype)}];
    if (!p.h) {
        const kernels::CodeObject co = kernels::linear::build_reduce_sum({inputs, length, dtype});
        p = allocate(s.rank.context, co.bytes.size(), JAL_PLACE_SLICE, lowest_slice(s.slice_mask));
        upload(s.rank.device, s.upload.get(), p.va, co.bytes.data(), co.bytes.size());
    }
    return p.va;
}

void Communicator::Impl::reduce(uint32_t r, std::span<const uint64_t> inputs, uint64_t out,
                                uint32_t length, jal_dtype dtype, Chain& chain)
{
    RankState& s = ranks[r];
    const uint64_t code = program(s, static_cast<uint32_t>(inputs.size()), length, dtype);
    // The arguments and the inputs table are written by the queue itself, in order: no host
    // memory has to outlive the call.
    const uint64_t args = s.scratch.va, table = args + 16;
    for (size_t k = 0; k < inputs.size(); ++k)
        s.queue().write_value(table + 8 * k, inputs[k], nullptr, chain.next());
    s.queue().write_value(args, table, nullptr, chain.next());
    s.queue().write_value(args + 8, out, nullptr, chain.next());
    jal_packet_dispatch d{};
    d.code_object = code;
    d.slice_mask = s.slice_mask;
    d.args = args;
    s.queue().dispatch(0, d, nullptr, false, chain.next());
}

void Communicator::Impl::copy(uint32_t r, uint64_t dst, uint64_t src, uint64_t bytes, Chain& chain)
{
    if (bytes) ranks[r].queue().copy(JAL_COPY_D2D, dst, src, bytes, nullptr, chain.next());
}

void Communicator::Impl::finish(uint32_t r, jal_signal_t done, Chain& chain)
{
    ranks[r].queue().nop(done ? done->signal.get() : nullptr, chain.next());
}

}  // namespace jal::collectives
