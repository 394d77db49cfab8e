// Reading the firmware's logs page by page (GET_LOG with first-seq / next-seq).
#include <jal/chip_function.hpp>

#include <jal/hw/admin.h>

#include "chip_function_impl.hpp"

namespace jal {

namespace {

// A page buffer big enough for the whole event ring in one or two commands, small enough
// to share cheaply.
constexpr uint32_t kLogPageBytes = 64 * 1024;
// A firmware that never reports the end must not make us loop forever.
constexpr int kMaxPages = 4096;

template <typename Entry>
struct LogRead {
    std::vector<Entry> entries;
    uint32_t next_seq = 0;
    uint32_t lost = 0;
};

template <typename Entry>
LogRead<Entry> read_log(ChipFunction::Impl& impl, uint32_t log_id, uint32_t first_seq)
{
    LogRead<Entry> out;
    uint32_t seq = first_seq;
    for (int page_no = 0; page_no < kMaxPages; page_no++) {
        auto reply = impl.run(JAL_ADMIN_GET_LOG, {log_id, seq}, kLogPageBytes);
        auto page = copy_struct<jal_log_page>(reply.data);
        size_t bytes = std::min<size_t>(reply.completion.result, kLogPageBytes);
        if (bytes < sizeof page || page.log_id != log_id || page.entry_size < sizeof(Entry) ||
            sizeof page + size_t{page.count} * page.entry_size > bytes)
            throw Error(JAL_STATUS_PROTOCOL, "malformed log page (log " +
                                                 std::to_string(page.log_id) + ", " +
                                                 std::to_string(page.count) + " entries of " +
                                                 std::to_string(page.entry_size) + " bytes in " +
                                                 std::to_string(bytes) + ")");
        for (uint32_t i = 0; i < page.count; i++)
            out.entries.push_back(
                copy_struct<Entry>(reply.data, sizeof page + size_t{i} * page.entry_size));
        out.next_seq = page.next_seq;
        out.lost = page.lost;
        if (page.count == 0) break;
        seq = page.first_seq + page.count;
        if (seq >= page.next_seq) break;
    }
    return out;
}

}  // namespace

EventLog ChipFunction::event_log(uint32_t first_seq)
{
    return impl_->guarded([&] {
        auto read = read_log<jal_log_event>(*impl_, JAL_LOG_EVENTS, first_seq);
        return EventLog{std::move(read.entries), read.next_seq, read.lost};
    });
}

PostTrail ChipFunction::post_trail()
{
    return impl_->guarded([&] {
        auto read = read_log<jal_post_entry>(*impl_, JAL_LOG_POST_TRAIL, 0);
        return PostTrail{std::move(read.entries), read.lost};
    });
}

}  // namespace jal
