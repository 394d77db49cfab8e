// Runs one graph on the chip: kernels uploaded once (cached by name), then each run's
// dispatches queued back to back with their argument blocks uploaded in one copy, one
// signal for the lot, and every dispatch's report summed into ChipTotals.
//
// (The toolchain helper's jal/kernels/dispatch.hpp Launcher was not there when this was
// written; this one only needs jal.hpp's Queue::dispatch.)
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <jal/jal.hpp>
#include <jal/kernels/builder.hpp>
#include <jal/model/runtime.hpp>

namespace jal::model::detail {

class Launcher {
public:
    // slice_mask: the logical slices the runtime uses (argument blocks and code live there).
    Launcher(const runtime::Device& device, const runtime::Context& context, uint64_t slice_mask,
             bool timing_only);

    // The device address of kernel `name`, building it with `build` the first time.
    uint64_t kernel(const std::string& name, const std::function<kernels::CodeObject()>& build);

    // Queues a dispatch of `code` on the slices of `slice_mask` with these arguments (8 bytes
    // each, in the kernel's order). Nothing runs before run(). lane >= 0: on lane queue
    // `lane` (between fork() and join()), else on the main queue.
    void add(uint64_t code, uint64_t slice_mask, std::vector<uint64_t> args, const char* what,
             int lane = -1);

    // Lanes: extra queues whose dispatches run alongside each other (queues run in parallel;
    // the runtime gives each lane disjoint slices). fork(): lane work queued after it starts
    // once the main queue's work before it is done; join(): main-queue work after it waits
    // for all lane work before it. The modelled time of a fork-join region is its slowest
    // lane's.
    void set_lanes(uint32_t n);
    void fork();
    void join();
    // Copies host bytes to the device before the dispatches of this run (small inputs).
    void upload(uint64_t dst_va, const void* src, size_t bytes);
    // Copies device bytes to the host after the dispatches of this run.
    void download(void* dst, uint64_t src_va, size_t bytes);
    // Runs everything queued, waits, and returns what the chip did. Throws jal::Error
    // naming the failing dispatch.
    ChipTotals run();
    // What run() saw, by the `what` of each dispatch (added to, never cleared here).
    std::map<std::string, ChipTotals>& by_kernel() { return by_kernel_; }

    runtime::Queue& queue() { return queue_; }
    bool timing_only() const { return timing_only_; }

private:
    enum class Kind { dispatch, fork, join };
    struct Pending {
        uint64_t code;
        uint64_t mask;
        size_t args_offset;
        const char* what;
        int lane = -1;
        Kind kind = Kind::dispatch;
    };
    runtime::Signal& pool_signal(size_t i);
    void clear();
    struct Transfer {
        uint64_t va;
        void* host_dst;  // download: where the bytes go
        size_t staging_offset;
        size_t bytes;
    };
    size_t stage(size_t bytes);  // room in the staging buffer, 64-byte aligned
    void grow_staging(size_t bytes);

    const runtime::Device& device_;
    const runtime::Context& context_;
    uint64_t mask_;
    runtime::Queue queue_;
    runtime::Signal done_;
    bool timing_only_;

    std::map<std::string, std::unique_ptr<runtime::Memory>> code_;
    std::vector<uint64_t> arg_words_;
    std::vector<Pending> pending_;
    std::vector<Transfer> uploads_;
    std::vector<Transfer> downloads_;
    std::vector<uint8_t> upload_bytes_;
    size_t download_bytes_ = 0;

    std::unique_ptr<runtime::HostBuffer> staging_;  // args, uploads, downloads
    std::unique_ptr<runtime::Memory> args_mem_;     // device copy of the argument blocks
    std::unique_ptr<runtime::HostBuffer> reports_;
    std::map<std::string, ChipTotals> by_kernel_;
    std::vector<std::unique_ptr<runtime::Queue>> lanes_;
    std::vector<std::unique_ptr<runtime::Signal>> pool_;
};

}  // namespace jal::model::detail
