// SENDALL and RECVALL (ISA 1.6, include/jal/hw/isa.h; a group given as a mask of dispatch
// slices since 1.7): an all-gather in one instruction a slice. On the network they are the
// SENDs and RECVs they stand for (the same messages, in the same order on each pair, so a
// SENDALL's tiles may be taken by RECVs and a RECVALL's sent by SENDs); what they save is the
// instructions around them, and the slice's engine ops: one for all the tiles.
#include "emu/tile_exec/executor.hpp"
#include "emu/tile_exec/peers.hpp"

#include "jal/hw/status.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace jal::emu::exec {

namespace {

constexpr std::uint32_t kOk = JAL_STATUS_OK;

// A SENDALL's or RECVALL's fields: its tile register, its semaphore `q` and its group
// (`n` slices). A jal_status; `addr` gets a group that does not exist.
std::uint32_t check_fields(const SliceState& s, const Insn& i, std::uint32_t slices,
                           PeerGroup& group, std::uint32_t& q, std::uint32_t& n,
                           std::uint64_t& addr)
{
    const std::int32_t sem = i.imm & ~JAL_GROUP_MASK;
    if (i.a >= JAL_ISA_TILE_REGS || !s.t[i.a].valid() || sem < 0 || sem >= JAL_ISA_SEMAPHORES)
        return JAL_STATUS_INVALID_FIELD;
    q = static_cast<std::uint32_t>(sem);
    group = {s.x[i.b & 31], (i.imm & JAL_GROUP_MASK) != 0};
    if (group_size(s, group, slices, n)) return kOk;
    addr = group.value;
    return JAL_STATUS_OUT_OF_RANGE;
}

}  // namespace

std::uint32_t Executor::step_send_all(SliceState& s, const Insn& i, std::uint64_t& addr)
{
    PeerGroup group;
    std::uint32_t q = 0, n = 0;
    if (const std::uint32_t st = check_fields(s, i, fabric_.slices(), group, q, n, addr); st != kOk)
        return st;
    const Tile& t = s.t[i.a];
    const std::uint64_t rb = row_bytes(t.dtype, t.cols), bytes = rb * t.rows;
    if (!p_.timing_only)
        if (const std::uint32_t st = stream_in(s, t.span(), false, nullptr, addr); st != kOk)
            return st;
    EngineOp op;
    op.engine = Engine::network;
    op.reads[0] = t.span();
    op.semaphore = q;
    op.net_bytes = bytes * n;
    // The tiles leave one after another, as SENDs back to back would: the k-th once k + 1
    // of them have crossed the network engine.
    const double end = s.timing.engine_op(op), each = s.timing.network_ns(bytes);
    s.q[q] += 1;
    // The rows packed once; each message gets a copy, the last one the packed buffer itself.
    std::vector<std::byte> packed;
    if (!p_.timing_only) {
        take_message_buffer(s, packed, bytes);
        for (std::uint32_t r = 0; r < t.rows; ++r)
            std::memcpy(packed.data() + r * rb, s.l1 + t.addr + std::uint64_t{r} * t.stride, rb);
    }
    for (std::uint32_t k = 0; k < n; ++k) {
        Message m{t.rows, t.cols, t.dtype, {}, s.timing.arrival(end - (n - 1 - k) * each)};
        if (!p_.timing_only && k + 1 < n) {
            take_message_buffer(s, m.data, bytes);
            std::memcpy(m.data.data(), packed.data(), bytes);
        } else if (!p_.timing_only) {
            m.data = std::move(packed);
        }
        fabric_.send(s.index, group_member(s, group, k, fabric_.slices()), std::move(m));
    }
    return kOk;
}

// The tiles come in the group's order; a slice blocked on the next one resumes the same
// instruction where it stopped (SliceState::gather).
std::uint32_t Executor::step_recv_all(SliceState& s, const Insn& i, std::uint64_t& addr,
                                      bool& blocked)
{
    blocked = false;
    PeerGroup group;
    std::uint32_t q = 0, n = 0;
    if (const std::uint32_t st = check_fields(s, i, fabric_.slices(), group, q, n, addr); st != kOk)
        return st;
    const Tile& t = s.t[i.a];
    if (row_bytes(t.dtype, 1) != 4) return JAL_STATUS_INVALID_FIELD;  // F32, I32: 4-byte columns
    GatherProgress& g = s.gather;
    if (g.next == 0 && !p_.timing_only) {
        const bool whole = t.rows == 1 || t.stride == row_bytes(t.dtype, t.cols);
        if (const std::uint32_t st = stream_in(s, t.span(), whole, nullptr, addr); st != kOk)
            return st;
    }
    for (; g.next < n; ++g.next) {
        const std::uint32_t from = group_member(s, group, g.next, fabric_.slices());
        Message m;
        if (!fabric_.receive(s.index, from, m)) {
            s.state = SliceRunState::blocked;
            s.block = BlockReason::recv;
            s.block_peer = from;
            s.resuming = true;
            blocked = true;
            return kOk;
        }
        if (m.rows != t.rows || m.dtype != t.dtype || m.cols > t.cols - g.cols) {
            g = {};
            return JAL_STATUS_INVALID_FIELD;
        }
        if (!m.data.empty()) {
            const std::uint64_t rb = std::uint64_t{m.cols} * 4, at = t.addr + g.cols * 4ull;
            for (std::uint32_t r = 0; r < t.rows; ++r)
                std::memcpy(s.l1 + at + std::uint64_t{r} * t.stride, m.data.data() + r * rb, rb);
            give_message_buffer(s, std::move(m.data));
        }
        g.cols += m.cols;
        g.arrival = std::max(g.arrival, m.arrival);
    }
    const bool complete = g.cols == t.cols;
    const double arrival = g.arrival;
    g = {};
    if (!complete) return JAL_STATUS_INVALID_FIELD;
    EngineOp op;
    op.engine = Engine::network;
    op.writes = t.span();
    op.semaphore = q;
    s.timing.recv(op, arrival);
    s.q[q] += 1;
    return kOk;
}

}  // namespace jal::emu::exec
