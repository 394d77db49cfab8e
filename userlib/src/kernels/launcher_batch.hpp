// The Launcher's batch (dispatch.hpp): what add, fork, join, cut, upload and download
// recorded, and the host and device memory run_batch reuses from batch to batch.
// Internal to launcher.cpp and launcher_stages.cpp.
#pragma once

#include <jal/kernels/dispatch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace jal::kernels {

namespace detail {
struct LauncherBatch {
    // cut: ends a staged program (LauncherOptions::stages); nothing is queued for it.
    enum class Kind { dispatch, fork, join, cut };
    struct Item {
        Kind kind = Kind::dispatch;
        const Program* program = nullptr;
        DispatchOptions options;  // options.label cleared: `label` keeps it
        std::string label;        // of a cut: the staged program it ends
        size_t args_offset = 0;
        size_t args_size = 0;
    };
    struct Transfer {
        uint64_t va;
        void* host_dst;  // download: where the bytes go
        size_t staging_offset;
        size_t bytes;
    };
    std::vector<Item> items;
    std::vector<uint8_t> args;  // the argument buffers, each 64-byte aligned
    std::vector<Transfer> uploads, downloads;
    std::vector<uint8_t> upload_bytes;
    size_t download_bytes = 0;
    // Layout of `staging`: args | uploads | downloads.
    size_t up_base = 0, down_base = 0;

    std::unique_ptr<jal::runtime::HostBuffer> staging;
    std::unique_ptr<jal::runtime::Memory> args_mem;     // the device copy of `args`
    std::unique_ptr<jal::runtime::HostBuffer> reports;  // one slot an item
    std::unique_ptr<jal::runtime::Signal> done;
    std::vector<std::unique_ptr<jal::runtime::Signal>> pool;  // fork/join signals
    // One a copy (the argument block, each upload and download): a failed copy leaves its
    // status there, so a batch that went well is known without asking the queues.
    std::vector<std::unique_ptr<jal::runtime::Signal>> copy_pool;
    size_t copies = 0;  // of copy_pool used by the batch in flight

    void clear()
    {
        items.clear(), args.clear(), uploads.clear(), downloads.clear();
        upload_bytes.clear(), download_bytes = 0;
    }
    jal::runtime::Signal& pool_signal(const jal::runtime::Device& dev, size_t i)
    {
        while (pool.size() <= i)
            pool.push_back(std::make_unique<jal::runtime::Signal>(dev, 0, false));
        return *pool[i];
    }
    jal::runtime::Signal& copy_signal(const jal::runtime::Device& dev)
    {
        while (copy_pool.size() <= copies)
            copy_pool.push_back(std::make_unique<jal::runtime::Signal>(dev, 0, false));
        jal::runtime::Signal& s = *copy_pool[copies++];
        s.store(1);
        return s;
    }
};
}  // namespace detail

}  // namespace jal::kernels
