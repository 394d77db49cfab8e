#include "messages.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include <jal/error.hpp>

namespace jal::direct {

namespace {

template <typename Msg>
Msg with_header(uint16_t type, uint64_t id, uint16_t flags = 0)
{
    Msg msg{};
    msg.hdr.type = type;
    msg.hdr.flags = flags;
    msg.hdr.size = sizeof(Msg);
    msg.hdr.id = id;
    return msg;
}

[[noreturn]] void malformed(const std::string& why)
{
    throw Error(JAL_STATUS_PROTOCOL, "malformed reply from the emulator: " + why);
}

}  // namespace

jal_msg_hello encode_hello(uint64_t id, std::string_view client_name)
{
    auto msg = with_header<jal_msg_hello>(JAL_MSG_HELLO, id);
    msg.proto_version = JAL_PROTO_VERSION;
    size_t n = std::min(client_name.size(), sizeof msg.client - 1);
    std::memcpy(msg.client, client_name.data(), n);
    return msg;
}

jal_msg_reg encode_reg_read(uint64_t id, uint32_t bar, uint32_t offset, uint32_t width)
{
    auto msg = with_header<jal_msg_reg>(JAL_MSG_REG_READ, id);
    msg.bar = bar;
    msg.offset = offset;
    msg.width = width;
    return msg;
}

jal_msg_reg encode_reg_write(uint64_t id, uint32_t bar, uint32_t offset, uint32_t width,
                             uint64_t value, bool ack)
{
    auto msg = with_header<jal_msg_reg>(JAL_MSG_REG_WRITE, id, ack ? JAL_MSG_F_ACK : 0);
    msg.bar = bar;
    msg.offset = offset;
    msg.width = width;
    msg.value = value;
    return msg;
}

jal_msg_mem_map encode_mem_map(uint64_t id, uint64_t bus_addr, uint64_t size, uint64_t fd_offset)
{
    auto msg = with_header<jal_msg_mem_map>(JAL_MSG_MEM_MAP, id);
    msg.bus_addr = bus_addr;
    msg.size = size;
    msg.fd_offset = fd_offset;
    return msg;
}

jal_msg_mem_map encode_mem_unmap(uint64_t id, uint64_t bus_addr, uint64_t size)
{
    auto msg = with_header<jal_msg_mem_map>(JAL_MSG_MEM_UNMAP, id);
    msg.bus_addr = bus_addr;
    msg.size = size;
    return msg;
}

jal_msg_set_irq encode_set_irq(uint64_t id, uint32_t vector)
{
    auto msg = with_header<jal_msg_set_irq>(JAL_MSG_SET_IRQ, id);
    msg.vector = vector;
    return msg;
}

HeaderOnlyMsg encode_get_doorbells(uint64_t id)
{
    return with_header<HeaderOnlyMsg>(JAL_MSG_GET_DOORBELLS, id);
}

jal_msg_client_info encode_client_info(uint64_t id, uint32_t function)
{
    auto msg = with_header<jal_msg_client_info>(JAL_MSG_CLIENT_INFO, id);
    msg.function = function;
    return msg;
}

DecodedReply decode_reply(std::span<const std::byte> packet)
{
    if (packet.size() < sizeof(jal_msg_reply))
        malformed(std::to_string(packet.size()) + " bytes, a reply has at least " +
                  std::to_string(sizeof(jal_msg_reply)));
    DecodedReply out{};
    std::memcpy(&out.reply, packet.data(), sizeof out.reply);
    const jal_msg_hdr& hdr = out.reply.hdr;
    if (hdr.type != JAL_MSG_REPLY)
        malformed("message type " + std::to_string(hdr.type) + " where a REPLY was expected");
    if (hdr.size != packet.size())
        malformed("header says " + std::to_string(hdr.size) + " bytes, packet has " +
                  std::to_string(packet.size()));
    size_t payload = packet.size() - sizeof(jal_msg_reply);
    if (payload == sizeof(jal_msg_hello_reply)) {
        jal_msg_hello_reply hello;
        std::memcpy(&hello, packet.data() + sizeof(jal_msg_reply), sizeof hello);
        out.hello = hello;
    } else if (payload == sizeof(jal_msg_client_info_reply)) {
        jal_msg_client_info_reply info;
        std::memcpy(&info, packet.data() + sizeof(jal_msg_reply), sizeof info);
        out.client_info = info;
    } else if (payload != 0) {
        malformed("unexpected " + std::to_string(payload) + "-byte payload");
    }
    return out;
}

const char* msg_type_name(uint16_t type)
{
    switch (type) {
    case JAL_MSG_HELLO:
        return "HELLO";
    case JAL_MSG_REG_READ:
        return "REG_READ";
    case JAL_MSG_REG_WRITE:
        return "REG_WRITE";
    case JAL_MSG_MEM_MAP:
        return "MEM_MAP";
    case JAL_MSG_MEM_UNMAP:
        return "MEM_UNMAP";
    case JAL_MSG_SET_IRQ:
        return "SET_IRQ";
    case JAL_MSG_GET_DOORBELLS:
        return "GET_DOORBELLS";
    case JAL_MSG_CLIENT_INFO:
        return "CLIENT_INFO";
    case JAL_MSG_REPLY:
        return "REPLY";
    default:
        return "unknown message";
    }
}

}  // namespace jal::direct
