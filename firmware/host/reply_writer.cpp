#include "firmware/host/reply_writer.hpp"

#include <cstring>

#include "firmware/hal/hal.hpp"
#include "jal/hw/mgmt.h"
#include "jal/hw/status.h"

namespace jal::fw::host {

bool ReplyWriter::flush()
{
    if (staged_ == 0 || status_ != JAL_STATUS_OK) return status_ == JAL_STATUS_OK;
    static_assert(JAL_DMA_LEN_MAX >= 1, "DMA length");
    // The staging buffer is smaller than JAL_DMA_LEN_MAX, so one DMA per flush.
    status_ = hal::dma(fn_, addr_ + flushed_, staging_.data(), staged_, true);
    flushed_ += staged_;
    staged_ = 0;
    return status_ == JAL_STATUS_OK;
}

bool ReplyWriter::put(const void* data, std::uint32_t n)
{
    const auto* src = static_cast<const std::uint8_t*>(data);
    if (offset_ + n > capacity_) n = capacity_ - offset_;
    while (n && status_ == JAL_STATUS_OK) {
        const std::uint32_t room = static_cast<std::uint32_t>(staging_.size()) - staged_;
        const std::uint32_t take = n < room ? n : room;
        std::memcpy(staging_.data() + staged_, src, take);
        staged_ += take;
        offset_ += take;
        src += take;
        n -= take;
        if (staged_ == staging_.size()) flush();
    }
    return status_ == JAL_STATUS_OK;
}

std::uint32_t ReplyWriter::finish()
{
    flush();
    return status_;
}

}  // namespace jal::fw::host
