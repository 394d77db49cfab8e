// The client end of one jal-emu connection: numbered requests, replies matched in order,
// posted register writes, a bounded wait for every reply. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <span>
#include <string_view>

#include "messages.hpp"
#include "seqpacket_socket.hpp"

namespace jal::direct {

class DirectConnection {
public:
    DirectConnection(SeqpacketSocket socket, std::chrono::milliseconds reply_timeout);

    // Throws VERSION_MISMATCH when the emulator speaks another major protocol version.
    jal_msg_hello_reply hello(std::string_view client_name);

    uint64_t reg_read(uint32_t bar, uint32_t offset, uint32_t width);
    // Posted unless `ack`: returns once sent; the emulator applies writes in order.
    void reg_write(uint32_t bar, uint32_t offset, uint32_t width, uint64_t value, bool ack);
    void mem_map(uint64_t bus_addr, uint64_t size, int memfd);
    void mem_unmap(uint64_t bus_addr, uint64_t size);
    void set_irq(uint32_t vector, int eventfd);
    // GET_DOORBELLS: the function's BAR2 as a memfd and the queue engines' kick eventfd.
    struct Doorbells {
        util::UniqueFd bar_memfd;
        util::UniqueFd kick_eventfd;
    };
    Doorbells get_doorbells();
    // CLIENT_INFO: who holds host function `function` of the chip.
    jal_msg_client_info_reply client_info(uint32_t function);

    // Replies to posted writes that the emulator rejected (they carry no other trace).
    uint64_t rejected_posted_writes() const;

private:
    template <typename Msg>
    DecodedReply transact(const Msg& msg, int pass_fd, std::vector<util::UniqueFd>* fds = nullptr);
    DecodedReply await_reply_locked(uint64_t id, uint16_t type, std::vector<util::UniqueFd>* fds);

    mutable std::mutex mutex_;
    SeqpacketSocket socket_;
    std::chrono::milliseconds reply_timeout_;
    uint64_t next_id_ = 1;
    uint64_t rejected_posted_writes_ = 0;
};

}  // namespace jal::direct
