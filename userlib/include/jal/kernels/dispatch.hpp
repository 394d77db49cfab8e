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
// Besides one dispatch at a time (run, submit/finish) the Launcher runs batches: a graph of
// many dispatches recorded host-side and submitted together (add, upload, download, then
// run_batch), with every argument buffer in one H2D copy and one completion for the lot.
// A batch may use lanes: extra queues whose dispatches run side by side between fork()
// and join(); a fork-join region's modelled time is its slowest lane's.
//
//   launcher.add(prog, Args{x, y, n}, {.slice_mask = m, .label = "attn_norm"});
//   launcher.download(host, logits_va, bytes);
//   jal::kernels::BatchReport r = launcher.run_batch();  // r.modelled_ns, r.dispatches[i]
//
// Single dispatches and batches may be mixed on one Launcher; both run in queue order.
// Not thread-safe: one Launcher per submitting thread (several may share a queue).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <jal/api.h>
#include <jal/jal.hpp>
#include <jal/kernels/builder.hpp>

namespace jal::kernels {

// Where device memory the Launcher or a Program allocates lives (jal_mem_alloc's placement
// and slice mask). The default: logical slice 0.
struct MemoryPlace {
    jal_placement placement = JAL_PLACE_SLICE;
    uint64_t slice_mask = 1;
};

// A code object copied into a context's device memory, ready to dispatch.
class JAL_API Program {
public:
    // Copies the object to device memory at `where` through `q` and waits. The object is
    // not validated here: the device does that on every dispatch. A program every slice of
    // wide dispatches fetches is best interleaved over them ({JAL_PLACE_INTERLEAVED, mask}).
    Program(const jal::runtime::Device& dev, jal::runtime::Context& ctx, jal::runtime::Queue& q,
            const CodeObject& co, const MemoryPlace& where = {});

    uint64_t address() const { return memory_.va(); }
    const std::string& name() const { return name_; }
    uint32_t args_size() const { return args_size_; }
    uint32_t l1_bytes() const { return l1_bytes_; }
    int32_t slice_table_arg() const { return slice_table_arg_; }  // CodeObject's hint
    bool after_messages() const { return after_messages_; }       // CodeObject's hint
    bool dispatch_senders() const { return dispatch_senders_; }   // CodeObject's hint
    int32_t readahead_slot() const { return readahead_slot_; }    // CodeObject's hint
    // The instructions, for fault messages (empty if the object is unreadable).
    const std::vector<uint64_t>& code() const { return code_; }

private:
    jal::runtime::Memory memory_;
    std::string name_;
    uint32_t args_size_ = 0;
    uint32_t l1_bytes_ = 0;
    int32_t slice_table_arg_ = -1;
    bool after_messages_ = false;
    bool dispatch_senders_ = false;
    int32_t readahead_slot_ = -1;
    std::vector<uint64_t> code_;
};

// The argument buffer: 8-byte slots in the kernel's declaration order (Builder::arg).
class JAL_API Args {
public:
    Args() = default;
    // One u64 slot a word.
    Args(std::initializer_list<uint64_t> words);
    explicit Args(std::span<const uint64_t> words);
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
    // What the dispatch is for ("attn_qkv"): named next to the kernel in fault messages and
    // kept in the batch report. Copied; may be empty.
    std::string_view label = {};
    // Batches only: the lane queue (0 .. lanes()-1) between fork() and join(); -1: the
    // Launcher's queue.
    int lane = -1;
};

struct LauncherOptions {
    // Where argument buffers live. Arguments every slice of wide dispatches reads are best
    // interleaved over those slices.
    MemoryPlace args = {};
    // Lane queues for batches (see Launcher::fork); more can be added with set_lanes().
    uint32_t lanes = 0;
    // Batches: link the dispatches between cuts (Launcher::cut) into one staged program
    // each (stages.hpp), a fork-join region's lanes side by side inside it. One dispatch
    // (and one report, labelled by the cut) instead of many; linked programs are built once
    // for each sequence of kernels, slices and argument sizes, and reused.
    bool stages = false;
};

// What a batch did: every dispatch's report in the order added, and the modelled time.
struct BatchReport {
    struct Dispatch {
        std::string label;  // DispatchOptions::label
        int lane = -1;
        jal_dispatch_report report{};
    };
    std::vector<Dispatch> dispatches;
    // The batch's modelled time: dispatches on the Launcher's queue add up; a fork-join
    // region counts its slowest lane (the lanes ran side by side).
    uint64_t modelled_ns = 0;
};

// "kernel K: page fault in slice 3 at pc 12 (opcode 0x1b st): st x4, [x3+8] (address
// 0x...)": what a failed report says, with the instruction disassembled from `code`.
JAL_API std::string dispatch_failure_message(std::string_view kernel,
                                             std::span<const uint64_t> code,
                                             const jal_dispatch_report& report);

namespace detail {
struct LauncherBatch;  // launcher_batch.hpp
}  // namespace detail

// Runs dispatches on one queue (and, for batches, on its lane queues). Owns device memory
// for argument buffers (allocated when first needed) and host memory for reports; device,
// context and queue must outlive it.
class JAL_API Launcher {
public:
    Launcher(const jal::runtime::Device& dev, jal::runtime::Context& ctx, jal::runtime::Queue& q,
             const LauncherOptions& o = {});
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

    // Batches. Nothing reaches the device before run_batch(); the argument buffer and the
    // options are checked (and copied) when added, as submit() does.
    void add(const Program& p, const Args& a, const DispatchOptions& o = {});
    // Lane work added after fork() starts once the queue's work before it is done; queue
    // work added after join() waits for all lane work before it.
    void fork();
    void join();
    // With LauncherOptions::stages: ends the current staged program; `label` names it in
    // the report (empty: its first and last dispatches' labels). Without: nothing.
    void cut(std::string_view label = {});
    // Host bytes (copied now) to the device before the batch's dispatches (small inputs).
    void upload(uint64_t dst_va, const void* src, size_t bytes);
    // Device bytes to `dst` after the batch's dispatches (written by run_batch()).
    void download(void* dst, uint64_t src_va, size_t bytes);
    // Submits the batch, waits, and clears it. Throws jal::Error with the first failed
    // dispatch's status and dispatch_failure_message (kernel, label, dispatch index), or a
    // failed copy's; queues left in error are reset.
    BatchReport run_batch();
    // run_batch() in two halves: start_batch() submits the batch and returns, finish_batch()
    // waits for it and reports as run_batch() does. Between them the queue may take other
    // work (it runs after the batch), and other launchers' batches may start: several
    // chips' batches then run together. Nothing may be added in between. `mode`: how to
    // wait (JAL_WAIT_INTERRUPT when the batch is known to have far to go: no spinning on a
    // CPU the device may need).
    void start_batch();
    BatchReport finish_batch(jal_wait_mode mode = JAL_WAIT_HYBRID);
    // Builds what run_batch() would run, then clears the batch without running it: with
    // LauncherOptions::stages its staged programs are linked and loaded now, so that a later
    // batch of the same kernels on the same slices, with the same argument layout, finds them
    // built (a model's first decode step, prepared while nothing waits on it). Nothing but
    // the programs' code reaches the device.
    void prepare_batch();
    // Linked programs kept for later batches (stage_batch's cache): for diagnostics and tests.
    size_t staged_programs() const { return staged_.size(); }

    // Makes at least `n` lane queues.
    void set_lanes(uint32_t n);
    uint32_t lanes() const { return static_cast<uint32_t>(lanes_.size()); }
    jal::runtime::Queue& queue() { return queue_; }
    uint64_t usable_slice_mask() const { return usable_mask_; }

private:
    struct Pending;
    using Batch = detail::LauncherBatch;
    void check(const Program& p, const Args& a, const DispatchOptions& o) const;
    void dispatch(jal::runtime::Queue& q, const Program& p, const DispatchOptions& o,
                  uint64_t args_va, uint64_t report_bus, jal::runtime::Signal* done);
    std::string failure_message(const Program& p, std::string_view label,
                                const jal_dispatch_report& r) const;
    void drain();  // waits for every pending dispatch, keeps their reports
    void collect(Pending& p);
    void prepare_batch_memory();
    void submit_batch();
    void stage_batch();  // launcher_stages.cpp
    const Program& staged_program(const std::vector<uint64_t>& key,
                                  const std::function<CodeObject()>& link);
    void fail_batch(jal_status st, const std::string& message);
    jal_status refusal(int lane);  // why a batch's dispatch on `lane` wrote no report

    jal::runtime::Device const& dev_;
    jal::runtime::Context& ctx_;
    jal::runtime::Queue& queue_;
    LauncherOptions options_;
    uint64_t usable_mask_ = 0;
    // Single dispatches: argument buffers bump-allocated in arena_ until drained, staging_
    // mirrors it (what the H2D copies read), one jal_dispatch_report a pending dispatch in
    // reports_. Allocated by the first submit().
    std::unique_ptr<jal::runtime::Memory> arena_;
    std::unique_ptr<jal::runtime::HostBuffer> staging_;
    std::unique_ptr<jal::runtime::HostBuffer> reports_;
    size_t arena_top_ = 0;
    size_t report_slots_ = 0;
    std::deque<std::unique_ptr<Pending>> pending_;
    std::vector<jal_dispatch_report> done_;
    std::unique_ptr<jal::Error> first_error_;
    std::unique_ptr<Batch> batch_;
    std::vector<std::unique_ptr<jal::runtime::Queue>> lanes_;
    std::map<std::vector<uint64_t>, std::unique_ptr<Program>> staged_;  // by stage_batch's key
};

}  // namespace jal::kernels
