// Encoding and decoding of the jal-emu transport messages (include/jal/emu/protocol.h).
// Pure functions over bytes so they can be tested without a socket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include <jal/emu/protocol.h>

namespace jal::direct {

jal_msg_hello encode_hello(uint64_t id, std::string_view client_name);
jal_msg_reg encode_reg_read(uint64_t id, uint32_t bar, uint32_t offset, uint32_t width);
jal_msg_reg encode_reg_write(uint64_t id, uint32_t bar, uint32_t offset, uint32_t width,
                             uint64_t value, bool ack);
jal_msg_mem_map encode_mem_map(uint64_t id, uint64_t bus_addr, uint64_t size, uint64_t fd_offset);
jal_msg_mem_map encode_mem_unmap(uint64_t id, uint64_t bus_addr, uint64_t size);
jal_msg_set_irq encode_set_irq(uint64_t id, uint32_t vector);
// A request that is only a header (GET_DOORBELLS).
struct HeaderOnlyMsg {
    jal_msg_hdr hdr;
};
HeaderOnlyMsg encode_get_doorbells(uint64_t id);
jal_msg_client_info encode_client_info(uint64_t id, uint32_t function);

struct DecodedReply {
    jal_msg_reply reply;
    std::optional<jal_msg_hello_reply> hello;  // present when the packet carries the payload
    std::optional<jal_msg_client_info_reply> client_info;  // likewise
};

// Throws jal::Error(JAL_STATUS_PROTOCOL) for anything that is not a well-formed REPLY.
DecodedReply decode_reply(std::span<const std::byte> packet);

const char* msg_type_name(uint16_t type);

}  // namespace jal::direct
