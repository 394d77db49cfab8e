// Code objects already validated and decoded, by their bytes. A model's graph dispatches the
// same few kernels again and again; validating an object (its CRC, every instruction) and
// decoding it each time cost the dispatch unit as much as a short kernel's run. The object
// is still read from device memory on every dispatch, and only an object equal byte for
// byte to one seen before reuses its program, so what runs is always what memory holds.
// Entries are kept per MMU context: one tenant's dispatches never find another's kernels
// (which would show, in wall-clock time only, that another tenant ran the same code).
#pragma once

#include "emu/tile_exec/insn.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace jal::emu {

class ProgramCache {
public:
    // The program of the code object `bytes` read in context `ctx`: decoded before from the
    // same bytes in that context, else parsed and decoded now. A code object that does not parse gives nullptr and its
    // jal_status in `status` (it is not kept).
    std::shared_ptr<const exec::Program> get(std::uint32_t ctx, std::span<const std::uint8_t> bytes,
                                             std::uint32_t& status);

private:
    struct Entry {
        std::uint32_t ctx;
        std::vector<std::uint8_t> bytes;
        std::shared_ptr<const exec::Program> program;
    };
    // At most 64 objects and 16 MiB of them (their decoded code about 1.5 times that): a
    // kernel is a few KiB, a staged program of a model's layer (stages.hpp) tens to
    // hundreds of KiB, a code object at most 1 MiB.
    static constexpr std::size_t kEntries = 64;
    static constexpr std::size_t kMaxBytes = 16u << 20;

    std::mutex m_;  // queue engines dispatch concurrently
    std::vector<Entry> entries_;
    std::size_t bytes_ = 0;  // of every entry's object
    std::size_t next_ = 0;   // the entry replaced next when full (round robin)
};

}  // namespace jal::emu
