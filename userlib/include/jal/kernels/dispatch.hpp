// dispatch.hpp: running kernels built with the Builder (builder.hpp) on a device.
//
//   jal::kernels::Program prog(dev, ctx, queue, builder.finish()); // code object -> device
//   jal::kernels::Launcher launcher(dev, ctx, queue);
//   jal_dispatch_report r = launcher.run(prog, jal::kernels::Args().u64(n).addr(out.va()));
//
// A dispatch is one JAL_PACKET_DISPATCH (jal_queue_dispatch): every slice of the mask runs
// the program; the Launcher uploads the argument buffer (an H2D copy into its own device
// arena, ordered before the dispatch by the queue), names a host report slot the device
// fills, and turns a failed report into a jal::Error whose message names the kernel, the
// faulting slice, pc and opcode, and the disassembled instruction.
//
// Not thread-safe: one Launcher per submitting thread (several may share a queue).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <jal/api.h>
#include <jal/jal.hpp>
#include <jal/kernels/builder.hpp>

namespace jal::kernels {

// A code object copied into a context's device memory, ready to dispatch.
class JAL_API Program {
public:
    // Copies the object to device memory on logical slice 0 through `q` and waits. The
    // object is not validated here: the device does that on every dispatch.
    Program(const jal::runtime::Device& dev, jal::runtime::Context& ctx, jal::runtime::Queue& q,
            const CodeObject& co);

    uint64_t address() const { return memory_.va(); }
    const std::string& name() const { return name_; }
    uint32_t args_size() const { return args_size_; }
    uint32_t l1_bytes() const { return l1_bytes_; }
    // The instructions, for fault messages (empty if the object is unreadable).
    const std::vector<uint64_t>& code() const { return code_; }

private:
    jal::runtime::Memory memory_;
    std::string name_;
    uint32_t args_size_ = 0;
    uint32_t l1_bytes_ = 0;
    std::vector<uint64_t> code_;
};

// The argument buffer: 8-byte slots in the kernel's declaration order (Builder::arg).
class JAL_API Args {
public:
    Args& u64(uint64_t v);
    Args& addr(uint64_t device_va);
    Args& f32(float v);  // in the slot's low 32 bits, the high ones zero
    std::span<const uint8_t> bytes() const { return bytes_; }
    size_t size() const { return bytes_.size(); }

private:
    std::vector<uint8_t> bytes_;
};

struct DispatchOptions {
    uint64_t slice_mask = 0;  // logical slices; 0: every usable slice
    uint32_t budget_kinsn =
        0;                     // per-slice instruction budget in thousands; 0: the device's default
    bool timing_only = false;  // JAL_DISPATCH_F_TIMING_ONLY: modelled time, no data
};

// "kernel K: page fault in slice 3 at pc 12 (opcode 0x1b st): st x4, [x3+8] (address
// 0x...)": what a failed report says, with the instruction disassembled from `code`.
JAL_API std::string dispatch_failure_message(std::string_view kernel,
                                             std::span<const uint64_t> code,
                                             const jal_dispatch_report& report);

// Runs dispatches on one queue. Owns a device arena for argument buffers and host memory
// for reports; device, context and queue must outlive it.
class JAL_API Launcher {
public:
    Launcher(const jal::runtime::Device& dev, jal::runtime::Context& ctx, jal::runtime::Queue& q);
    ~Launcher();
    Launcher(const Launcher&) = delete;
    Launcher& operator=(const Launcher&) = delete;

    // Submits and waits for it (and everything submitted before). Throws jal::Error with
    // the failure's status and dispatch_failure_message on failure.
    jal_dispatch_report run(const Program& p, const Args& a, const DispatchOptions& o = {});
    // Asynchronous, in queue order. Throws at once only for what the host can see (an
    // argument buffer of the wrong size, a slice outside the usable ones).
    void submit(const Program& p, const Args& a, const DispatchOptions& o = {});
    // Waits for everything submitted; its reports in submission order. Throws on the first
    // failure (the others are still waited for).
    std::vector<jal_dispatch_report> finish();

    uint64_t usable_slice_mask() const { return usable_mask_; }

private:
    struct Pending;
    void drain();  // waits for every pending dispatch, keeps their reports
    void collect(Pending& p);

    jal::runtime::Device const& dev_;
    jal::runtime::Queue& queue_;
    uint64_t usable_mask_ = 0;
    jal::runtime::Memory arena_;        // argument buffers, bump-allocated until drained
    jal::runtime::HostBuffer staging_;  // mirrors the arena: what the H2D copies read
    jal::runtime::HostBuffer reports_;  // one struct jal_dispatch_report a pending dispatch
    size_t arena_top_ = 0;
    size_t report_slots_ = 0;
    std::deque<std::unique_ptr<Pending>> pending_;
    std::vector<jal_dispatch_report> done_;
    std::unique_ptr<jal::Error> first_error_;
};

}  // namespace jal::kernels
