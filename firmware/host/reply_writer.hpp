// Streams a command's reply into the host buffer through a small staging buffer, in DMA
// chunks, so replies larger than the staging buffer (logs, HBM reports) never need to
// exist whole in SRAM. Stops at the host's data_len; remembers the first DMA failure.
#pragma once

#include <cstdint>
#include <span>

namespace jal::fw::host {

class ReplyWriter {
public:
    ReplyWriter(std::uint32_t fn, std::uint64_t addr, std::uint32_t capacity,
                std::span<std::uint8_t> staging)
        : fn_(fn), addr_(addr), capacity_(capacity), staging_(staging)
    {}

    // Appends n bytes (truncated at capacity). Returns false once a DMA has failed.
    bool put(const void* data, std::uint32_t n);
    // Flushes what is staged; returns a jal_status.
    [[nodiscard]] std::uint32_t finish();
    // Bytes that reached (or are staged for) the host buffer.
    std::uint32_t written() const { return offset_; }

private:
    bool flush();

    std::uint32_t fn_;
    std::uint64_t addr_;
    std::uint32_t capacity_;
    std::span<std::uint8_t> staging_;
    std::uint32_t staged_ = 0;   // bytes in staging not yet sent
    std::uint32_t flushed_ = 0;  // bytes already sent
    std::uint32_t offset_ = 0;   // total accepted
    std::uint32_t status_ = 0;   // JAL_STATUS_OK
};

}  // namespace jal::fw::host
