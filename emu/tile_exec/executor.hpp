// Functional execution of one slice: runs its instructions with isa.h's sequential
// semantics until the program ends, faults, blocks (RECV with nothing queued, BARRIER,
// a WAIT that can never be satisfied) or uses up its quantum, reporting every instruction
// to the slice's timing model.
#pragma once

#include "emu/tile_exec/device_memory.hpp"
#include "emu/tile_exec/fabric.hpp"
#include "emu/tile_exec/insn.hpp"
#include "emu/tile_exec/slice_state.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace jal::emu::exec {

struct DispatchParams {
    const Program* program = nullptr;
    DeviceMemory* memory = nullptr;
    std::uint64_t args = 0;    // JAL_SR_ARGS
    std::uint64_t budget = 0;  // instructions per slice
    bool timing_only = false;
    bool log_stages = false;    // SliceState::stages (jal-emu --trace)
    std::uint64_t log_ops = 0;  // physical slices whose SliceState::ops are kept (--trace-ops)
};

enum class RunResult { ended, faulted, blocked, yielded, stopped };

// An MMA's b read where it lies in host memory (a streamed load's rows) rather than in L1.
struct HostOperand {
    const std::byte* data = nullptr;
    std::uint32_t stride = 0;
};

class Executor {
public:
    static constexpr std::uint64_t kQuantum = 1u << 16;  // instructions before yielding
    static constexpr std::size_t kSpareMessages = 32;    // received buffers a slice keeps
    static constexpr std::size_t kMessageBytes = 4096;   // the least a new buffer holds

    Executor(const DispatchParams& p, SliceFabric& fabric) : p_(p), fabric_(fabric) {}
    RunResult run(SliceState& s);

private:
    RunResult fault(SliceState& s, std::uint32_t status, std::uint64_t address = 0);
    // Runs plain scalar instructions from s.pc (ALU ops, LI/LUI, branches) with the issue
    // time in registers, up to the first one that is not plain or that run()'s checks
    // would stop (it is left to run(), not issued); n counts the instructions run.
    void run_plain(SliceState& s, std::uint64_t& n);
    bool register_step(SliceState& s, const Insn& i) const;
    bool timed_step(SliceState& s, const Insn& i, std::uint32_t pc, SliceTiming::IssueState& is);
    static std::uint32_t element_at(const SliceState& s, const Insn& i, std::uint32_t& off,
                                    std::uint64_t& addr);
    void access_element(SliceState& s, const Insn& i, std::uint32_t off) const;
    std::uint32_t step_memory(SliceState& s, const Insn& i, std::uint64_t& addr);
    void step_prefetch(SliceState& s, const Insn& i);
    std::uint32_t step_tile_dma(SliceState& s, const Insn& i, std::uint64_t& addr);
    // SENDALL, RECVALL (all_gather.cpp); RECVALL's `blocked`: waiting for a tile, come back.
    std::uint32_t step_send_all(SliceState& s, const Insn& i, std::uint64_t& addr);
    std::uint32_t step_recv_all(SliceState& s, const Insn& i, std::uint64_t& addr, bool& blocked);
    // A buffer of `bytes` for a message (one the slice received into before, if it kept
    // one: an all-gather sends as many as it receives, so a send then allocates nothing),
    // and a received message's buffer kept for that.
    static void take_message_buffer(SliceState& s, std::vector<std::byte>& out,
                                    std::uint64_t bytes);
    static void give_message_buffer(SliceState& s, std::vector<std::byte>&& buffer);
    // Streamed loads (streamed_loads.hpp) under L1 range r: their rows there are copied in,
    // or (written: r is about to be written whole) the loads are over. `mem`: the caller's
    // access to device memory, or null (one is taken if bytes move). A jal_status; `addr`
    // gets the faulting device address.
    std::uint32_t stream_in(SliceState& s, L1Range r, bool written, DeviceMemory::Access* mem,
                            std::uint64_t& addr);
    // Before a matrix or vector op: the streamed rows of its tile operands are copied in,
    // but for an MMA's b lying inside one streamed load, which `b` then points at in HBM.
    // `mem` is taken on the first operand a load lies under, and is held by the caller while
    // the MMA reads b there (an UNMAP waits for it).
    std::uint32_t stream_operands(SliceState& s, const Insn& i,
                                  std::optional<DeviceMemory::Access>& mem, HostOperand& b,
                                  std::uint64_t& addr);
    std::uint32_t move_rows(SliceState& s, const Insn& i, const Tile& t, std::uint64_t base,
                            std::uint64_t stride, bool streamed, DeviceMemory::Access& mem,
                            EngineOp& op, std::uint64_t& fault_va);
    // STAGE: returns the next pc.
    std::uint64_t enter_stage(SliceState& s, const Insn& i);
    // Joins the barrier of `group` (0: the whole dispatch); false: blocked, come back.
    bool join_barrier(SliceState& s, std::uint64_t group);
    // Pays an ordered STAGE's barrier if it is still due; false: blocked.
    bool settle(SliceState& s);

    const DispatchParams& p_;
    SliceFabric& fabric_;
};

// The matrix and vector ops (MMA, V*): field checks, the computation (none in timing-only
// mode) and the engine op for the timing model. Returns a jal_status.
// b_host: an MMA's b where it lies (its L1 bytes are not there).
std::uint32_t execute_tile_op(SliceState& s, const Insn& i, bool timing_only, EngineOp& op,
                              std::uint64_t& addr, const HostOperand* b_host = nullptr);

}  // namespace jal::emu::exec
