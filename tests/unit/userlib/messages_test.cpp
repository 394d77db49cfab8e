// Encoding and decoding of jal-emu transport messages.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include <jal/error.hpp>

#include "backend/direct/messages.hpp"

namespace {

using namespace jal::direct;

template <typename T>
std::vector<std::byte> bytes(const T& v)
{
    std::vector<std::byte> out(sizeof v);
    std::memcpy(out.data(), &v, sizeof v);
    return out;
}

jal_msg_reply reply(uint64_t id, uint32_t size = sizeof(jal_msg_reply))
{
    jal_msg_reply r{};
    r.hdr.type = JAL_MSG_REPLY;
    r.hdr.size = size;
    r.hdr.id = id;
    r.value = 0xdeadbeef;
    return r;
}

jal_status status_of(std::vector<std::byte> packet)
{
    try {
        decode_reply(packet);
    } catch (const jal::Error& e) {
        return e.status();
    }
    return JAL_STATUS_OK;
}

TEST(Messages, HelloCarriesVersionAndTruncatedName)
{
    auto m = encode_hello(1, std::string(100, 'x'));
    EXPECT_EQ(m.hdr.type, JAL_MSG_HELLO);
    EXPECT_EQ(m.hdr.size, sizeof m);
    EXPECT_EQ(m.hdr.id, 1u);
    EXPECT_EQ(m.proto_version, uint32_t{JAL_PROTO_VERSION});
    EXPECT_EQ(m.flags, 0u);
    EXPECT_EQ(std::strlen(m.client), sizeof m.client - 1);
}

TEST(Messages, RegisterMessages)
{
    auto rd = encode_reg_read(5, 0, 0x20, 4);
    EXPECT_EQ(rd.hdr.type, JAL_MSG_REG_READ);
    EXPECT_EQ(rd.hdr.size, 40u);
    EXPECT_EQ(rd.offset, 0x20u);
    EXPECT_EQ(rd.width, 4u);
    auto posted = encode_reg_write(6, 2, 0x1000, 8, 77, false);
    EXPECT_EQ(posted.hdr.type, JAL_MSG_REG_WRITE);
    EXPECT_EQ(posted.hdr.flags, 0);
    EXPECT_EQ(posted.bar, 2u);
    EXPECT_EQ(posted.value, 77u);
    EXPECT_EQ(encode_reg_write(7, 0, 0, 4, 0, true).hdr.flags, JAL_MSG_F_ACK);
}

TEST(Messages, MemoryAndInterruptMessages)
{
    auto map = encode_mem_map(1, 0x100000000, 8192, 4096);
    EXPECT_EQ(map.hdr.type, JAL_MSG_MEM_MAP);
    EXPECT_EQ(map.hdr.size, 48u);
    EXPECT_EQ(map.bus_addr, 0x100000000u);
    EXPECT_EQ(map.size, 8192u);
    EXPECT_EQ(map.fd_offset, 4096u);
    auto unmap = encode_mem_unmap(2, 0x100000000, 8192);
    EXPECT_EQ(unmap.hdr.type, JAL_MSG_MEM_UNMAP);
    EXPECT_EQ(unmap.fd_offset, 0u);
    auto irq = encode_set_irq(3, 0);
    EXPECT_EQ(irq.hdr.type, JAL_MSG_SET_IRQ);
    EXPECT_EQ(irq.hdr.size, 24u);
}

TEST(Messages, DecodesPlainReply)
{
    auto decoded = decode_reply(bytes(reply(9)));
    EXPECT_EQ(decoded.reply.hdr.id, 9u);
    EXPECT_EQ(decoded.reply.value, 0xdeadbeefu);
    EXPECT_FALSE(decoded.hello);
}

TEST(Messages, DecodesHelloPayload)
{
    struct {
        jal_msg_reply r;
        jal_msg_hello_reply h;
    } packet{reply(1, sizeof(jal_msg_reply) + sizeof(jal_msg_hello_reply)), {}};
    packet.h.proto_version = JAL_PROTO_VERSION;
    packet.h.function = 3;
    packet.h.bar_size[0] = 0x10000;
    static_assert(sizeof packet == sizeof(jal_msg_reply) + sizeof(jal_msg_hello_reply));
    auto decoded = decode_reply(bytes(packet));
    ASSERT_TRUE(decoded.hello);
    EXPECT_EQ(decoded.hello->function, 3u);
    EXPECT_EQ(decoded.hello->bar_size[0], 0x10000u);
}

TEST(Messages, RejectsMalformedReplies)
{
    auto short_packet = bytes(reply(1));
    short_packet.resize(10);
    EXPECT_EQ(status_of(short_packet), JAL_STATUS_PROTOCOL);

    auto wrong_type = reply(1);
    wrong_type.hdr.type = JAL_MSG_REG_READ;
    EXPECT_EQ(status_of(bytes(wrong_type)), JAL_STATUS_PROTOCOL);

    EXPECT_EQ(status_of(bytes(reply(1, 33))), JAL_STATUS_PROTOCOL);

    auto odd_payload = bytes(reply(1, sizeof(jal_msg_reply) + 8));
    odd_payload.resize(sizeof(jal_msg_reply) + 8);
    EXPECT_EQ(status_of(odd_payload), JAL_STATUS_PROTOCOL);
}

TEST(Messages, TypeNames)
{
    EXPECT_STREQ(msg_type_name(JAL_MSG_MEM_MAP), "MEM_MAP");
    EXPECT_STREQ(msg_type_name(0x42), "unknown message");
}

}  // namespace
