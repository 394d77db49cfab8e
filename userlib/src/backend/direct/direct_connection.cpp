#include "direct_connection.hpp"

#include <array>
#include <fcntl.h>
#include <string>

#include <jal/error.hpp>

#include "../../util/deadline.hpp"

namespace jal::direct {

namespace {
template <typename Msg>
std::span<const std::byte> bytes_of(const Msg& msg)
{
    return {reinterpret_cast<const std::byte*>(&msg), sizeof msg};
}
}  // namespace

DirectConnection::DirectConnection(SeqpacketSocket socket, std::chrono::milliseconds reply_timeout)
    : socket_(std::move(socket)), reply_timeout_(reply_timeout)
{}

template <typename Msg>
DecodedReply DirectConnection::transact(const Msg& msg_template, int pass_fd,
                                        std::vector<util::UniqueFd>* fds)
{
    std::lock_guard lock(mutex_);
    Msg msg = msg_template;
    msg.hdr.id = next_id_++;
    socket_.send(bytes_of(msg), pass_fd, reply_timeout_);
    DecodedReply reply = await_reply_locked(msg.hdr.id, msg.hdr.type, fds);
    if (reply.reply.status != JAL_STATUS_OK)
        throw Error(static_cast<jal_status>(reply.reply.status),
                    std::string(msg_type_name(msg.hdr.type)) +
                        " rejected by the emulator: " + jal_status_name(reply.reply.status));
    return reply;
}

DecodedReply DirectConnection::await_reply_locked(uint64_t id, uint16_t type,
                                                  std::vector<util::UniqueFd>* fds)
{
    std::array<std::byte, JAL_PROTO_MSG_MAX> buffer;
    for (;;) {
        size_t n;
        if (fds) fds->clear();
        try {
            n = socket_.receive(buffer, reply_timeout_, fds);
        } catch (const Error& e) {
            if (e.status() == JAL_STATUS_TIMEOUT)
                throw Error(JAL_STATUS_TIMEOUT, std::string("the emulator did not answer ") +
                                                    msg_type_name(type) + " within " +
                                                    util::describe(reply_timeout_));
            throw;
        }
        DecodedReply reply = decode_reply(std::span(buffer.data(), n));
        if (reply.reply.hdr.id == id) return reply;
        if (reply.reply.hdr.id > id)
            throw Error(JAL_STATUS_PROTOCOL, "reply id " + std::to_string(reply.reply.hdr.id) +
                                                 " from the future (waiting for " +
                                                 std::to_string(id) + ")");
        // An older id: a rejected posted write, or the late answer to a request that timed
        // out. Neither has anyone waiting for it.
        if (reply.reply.status != JAL_STATUS_OK) rejected_posted_writes_++;
    }
}

jal_msg_hello_reply DirectConnection::hello(std::string_view client_name)
{
    DecodedReply reply = transact(encode_hello(0, client_name), -1);
    if (!reply.hello) throw Error(JAL_STATUS_PROTOCOL, "HELLO reply without its payload");
    uint32_t theirs = reply.hello->proto_version;
    if ((theirs >> 16) != JAL_PROTO_VERSION_MAJOR)
        throw Error(JAL_STATUS_VERSION_MISMATCH,
                    "emulator speaks transport protocol " + std::to_string(theirs >> 16) + "." +
                        std::to_string(theirs & 0xffff) + ", this library " +
                        std::to_string(JAL_PROTO_VERSION_MAJOR) + "." +
                        std::to_string(JAL_PROTO_VERSION_MINOR));
    return *reply.hello;
}

uint64_t DirectConnection::reg_read(uint32_t bar, uint32_t offset, uint32_t width)
{
    return transact(encode_reg_read(0, bar, offset, width), -1).reply.value;
}

void DirectConnection::reg_write(uint32_t bar, uint32_t offset, uint32_t width, uint64_t value,
                                 bool ack)
{
    if (ack) {
        transact(encode_reg_write(0, bar, offset, width, value, true), -1);
        return;
    }
    std::lock_guard lock(mutex_);
    jal_msg_reg msg = encode_reg_write(next_id_++, bar, offset, width, value, false);
    socket_.send(bytes_of(msg), -1, reply_timeout_);
}

void DirectConnection::mem_map(uint64_t bus_addr, uint64_t size, int memfd)
{
    transact(encode_mem_map(0, bus_addr, size, 0), memfd);
}

void DirectConnection::mem_unmap(uint64_t bus_addr, uint64_t size)
{
    transact(encode_mem_unmap(0, bus_addr, size), -1);
}

void DirectConnection::set_irq(uint32_t vector, int eventfd)
{
    transact(encode_set_irq(0, vector), eventfd);
}

DirectConnection::Doorbells DirectConnection::get_doorbells()
{
    std::vector<util::UniqueFd> fds;
    transact(encode_get_doorbells(0), -1, &fds);
    if (fds.size() != 2)
        throw Error(JAL_STATUS_PROTOCOL, "GET_DOORBELLS reply carries " +
                                             std::to_string(fds.size()) +
                                             " descriptors, expected 2 (BAR2 memfd, kick eventfd)");
    // We store into that page: one its owner could truncate would crash us (SIGBUS).
    const int seals = ::fcntl(fds[0].get(), F_GET_SEALS);
    if (seals < 0 || !(seals & F_SEAL_SHRINK))
        throw Error(JAL_STATUS_PROTOCOL, "the emulator's doorbell memfd is not sealed against "
                                         "shrinking (F_SEAL_SHRINK)");
    return Doorbells{std::move(fds[0]), std::move(fds[1])};
}

jal_msg_client_info_reply DirectConnection::client_info(uint32_t function)
{
    DecodedReply reply = transact(encode_client_info(0, function), -1);
    if (!reply.client_info)
        throw Error(JAL_STATUS_PROTOCOL, "CLIENT_INFO reply without its payload");
    return *reply.client_info;
}

uint64_t DirectConnection::rejected_posted_writes() const
{
    std::lock_guard lock(mutex_);
    return rejected_posted_writes_;
}

}  // namespace jal::direct
