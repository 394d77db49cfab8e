// The emulator's side of the transport protocol, over a socketpair, against a chip whose
// management core is not running (register and memory traffic need no firmware).
#include "emu/chip/chip.hpp"
#include "emu/transport/connection.hpp"
#include "jal/emu/protocol.h"
#include "jal/hw/regs.h"
#include "jal/hw/status.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <thread>

#include "common/send_with_fd.hpp"

namespace {

class ProtocolTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        jal::emu::ChipConfig cfg;
        cfg.index = 2;
        chip_ = std::make_unique<jal::emu::Chip>(cfg);
        int sv[2];
        ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        client_ = sv[0];
        server_fd_ = sv[1];
        server_ = std::thread([this] { jal::emu::serve_connection(*chip_, server_fd_); });
    }
    void TearDown() override
    {
        shutdown(client_, SHUT_RDWR);
        server_.join();
        close(client_);
        close(server_fd_);
    }

    void send_raw(const void* p, std::size_t n, int fd = -1)
    {
        ASSERT_TRUE(jal::test::send_with_fd(client_, p, n, fd));
    }

    jal_msg_reply recv_reply(void* payload = nullptr, std::size_t payload_len = 0)
    {
        std::array<std::byte, JAL_PROTO_MSG_MAX> buf{};
        const ssize_t n = recv(client_, buf.data(), buf.size(), 0);
        EXPECT_GE(n, static_cast<ssize_t>(sizeof(jal_msg_reply)));
        jal_msg_reply r{};
        std::memcpy(&r, buf.data(), sizeof r);
        EXPECT_EQ(r.hdr.type, JAL_MSG_REPLY);
        EXPECT_EQ(r.hdr.size, static_cast<std::uint32_t>(n));
        if (payload) std::memcpy(payload, buf.data() + sizeof r, payload_len);
        return r;
    }

    jal_msg_hello_reply hello()
    {
        jal_msg_hello h{};
        h.hdr = {JAL_MSG_HELLO, 0, sizeof h, 1};
        h.proto_version = JAL_PROTO_VERSION;
        std::strcpy(h.client, "protocol-test");
        send_raw(&h, sizeof h);
        jal_msg_hello_reply hr{};
        const auto r = recv_reply(&hr, sizeof hr);
        EXPECT_EQ(r.status, JAL_STATUS_OK);
        EXPECT_EQ(r.hdr.id, 1u);
        return hr;
    }

    jal_msg_reply reg(std::uint16_t type, std::uint32_t offset, std::uint64_t value = 0,
                      std::uint16_t flags = 0, std::uint32_t width = 4,
                      std::uint32_t bar = JAL_BAR_REGS)
    {
        jal_msg_reg m{};
        m.hdr = {type, flags, sizeof m, ++id_};
        m.bar = bar;
        m.offset = offset;
        m.width = width;
        m.value = value;
        send_raw(&m, sizeof m);
        if (type == JAL_MSG_REG_WRITE && !(flags & JAL_MSG_F_ACK)) return {};
        return recv_reply();
    }

    std::unique_ptr<jal::emu::Chip> chip_;
    int client_ = -1, server_fd_ = -1;
    std::thread server_;
    std::uint64_t id_ = 100;
};

}  // namespace

TEST_F(ProtocolTest, HelloAssignsAFunctionAndDescribesTheDevice)
{
    const auto hr = hello();
    EXPECT_EQ(hr.proto_version, unsigned{JAL_PROTO_VERSION});
    EXPECT_EQ(hr.chip_index, 2u);
    EXPECT_LT(hr.function, unsigned{JAL_MGMT_MAX_FUNCS});
    EXPECT_EQ(hr.bar_size[JAL_BAR_REGS], JAL_BAR_REGS_SIZE);
    EXPECT_EQ(hr.msix_vectors, unsigned{JAL_MSIX_VECTORS});
}

TEST_F(ProtocolTest, RegistersReadAndWrite)
{
    hello();
    const auto id = reg(JAL_MSG_REG_READ, JAL_REG_ID);
    EXPECT_EQ(id.status, JAL_STATUS_OK);
    EXPECT_EQ(id.value, JAL_ID_MAGIC);
    EXPECT_EQ(id.hdr.id, id_);
    EXPECT_EQ(reg(JAL_MSG_REG_READ, JAL_REG_CHIP_INDEX).value, 2u);
    reg(JAL_MSG_REG_WRITE, JAL_REG_SCRATCH0 + 4, 0xdeadbeef);  // posted
    EXPECT_EQ(reg(JAL_MSG_REG_READ, JAL_REG_SCRATCH0 + 4).value, 0xdeadbeefu);
    EXPECT_EQ(reg(JAL_MSG_REG_WRITE, JAL_REG_ADMIN_SQ_BASE_LO, 0x4000, JAL_MSG_F_ACK).status,
              JAL_STATUS_OK);
    EXPECT_EQ(reg(JAL_MSG_REG_READ, JAL_REG_ADMIN_SQ_BASE_LO).value, 0x4000u);
    EXPECT_EQ(reg(JAL_MSG_REG_READ, 0x7ff0).value, 0u) << "unassigned offsets read as zero";
    EXPECT_EQ(reg(JAL_MSG_REG_READ, JAL_REG_ID + 2).status, JAL_STATUS_INVALID_FIELD)
        << "misaligned";
    EXPECT_EQ(reg(JAL_MSG_REG_READ, JAL_REG_ID, 0, 0, 3).status, JAL_STATUS_INVALID_FIELD)
        << "bad width";
    EXPECT_EQ(reg(JAL_MSG_REG_READ, JAL_REG_ID, 0, 0, 4, 9).status, JAL_STATUS_INVALID_FIELD)
        << "bad BAR";
}

TEST_F(ProtocolTest, MalformedMessagesGetProtocolErrorsAndTheConnectionSurvives)
{
    // Before HELLO, anything else is refused.
    jal_msg_reg early{};
    early.hdr = {JAL_MSG_REG_READ, 0, sizeof early, 7};
    early.width = 4;
    send_raw(&early, sizeof early);
    EXPECT_EQ(recv_reply().status, JAL_STATUS_PROTOCOL);

    hello();
    const std::uint8_t tiny[5] = {1, 2, 3, 4, 5};
    send_raw(tiny, sizeof tiny);
    EXPECT_EQ(recv_reply().status, JAL_STATUS_PROTOCOL);

    jal_msg_reg wrong_size{};
    wrong_size.hdr = {JAL_MSG_REG_READ, 0, 12345, 8};
    send_raw(&wrong_size, sizeof wrong_size);
    EXPECT_EQ(recv_reply().status, JAL_STATUS_PROTOCOL);

    jal_msg_hdr unknown{0x55, 0, sizeof(jal_msg_hdr), 9};
    send_raw(&unknown, sizeof unknown);
    const auto r = recv_reply();
    EXPECT_EQ(r.status, JAL_STATUS_PROTOCOL);
    EXPECT_EQ(r.hdr.id, 9u);

    std::array<std::byte, JAL_PROTO_MSG_MAX + 64> huge{};
    jal_msg_hdr h{JAL_MSG_REG_READ, 0, static_cast<std::uint32_t>(huge.size()), 10};
    std::memcpy(huge.data(), &h, sizeof h);
    send_raw(huge.data(), huge.size());
    EXPECT_EQ(recv_reply().status, JAL_STATUS_PROTOCOL);

    jal_msg_hello again{};
    again.hdr = {JAL_MSG_HELLO, 0, sizeof again, 11};
    again.proto_version = JAL_PROTO_VERSION;
    send_raw(&again, sizeof again);
    EXPECT_EQ(recv_reply().status, JAL_STATUS_PROTOCOL);

    EXPECT_EQ(reg(JAL_MSG_REG_READ, JAL_REG_ID).value, JAL_ID_MAGIC) << "still serving";
}

TEST_F(ProtocolTest, WrongMajorVersionIsRefused)
{
    jal_msg_hello h{};
    h.hdr = {JAL_MSG_HELLO, 0, sizeof h, 1};
    h.proto_version = (JAL_PROTO_VERSION_MAJOR + 1) << 16;
    send_raw(&h, sizeof h);
    EXPECT_EQ(recv_reply().status, JAL_STATUS_VERSION_MISMATCH);
}

TEST_F(ProtocolTest, SharedMemoryIsWhereTheDeviceDmas)
{
    const auto hr = hello();
    const int mfd = memfd_create("proto", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    ASSERT_EQ(ftruncate(mfd, 8192), 0);
    ASSERT_EQ(fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
    auto* p = static_cast<char*>(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0));
    jal_msg_mem_map m{};
    m.hdr = {JAL_MSG_MEM_MAP, 0, sizeof m, 20};
    m.bus_addr = 0x7000000;
    m.size = 8192;
    send_raw(&m, sizeof m, mfd);
    EXPECT_EQ(recv_reply().status, JAL_STATUS_OK);
    std::strcpy(p + 100, "from host");
    char buf[16] = {};
    EXPECT_EQ(chip_->host().dma(hr.function, 0x7000000 + 100, buf, 10, false), JAL_STATUS_OK);
    EXPECT_STREQ(buf, "from host");
    EXPECT_EQ(chip_->host().dma(hr.function, 0x7000000 + 8190, buf, 10, true),
              JAL_STATUS_DMA_FAULT);

    m.hdr.id = 21;
    send_raw(&m, sizeof m);  // no descriptor
    EXPECT_EQ(recv_reply().status, JAL_STATUS_INVALID_FIELD);

    m.hdr = {JAL_MSG_MEM_UNMAP, 0, sizeof m, 22};
    send_raw(&m, sizeof m);
    EXPECT_EQ(recv_reply().status, JAL_STATUS_OK);
    EXPECT_EQ(chip_->host().dma(hr.function, 0x7000000 + 100, buf, 10, false),
              JAL_STATUS_DMA_FAULT);
    munmap(p, 8192);
    close(mfd);
}

TEST_F(ProtocolTest, InterruptsArriveOnTheBoundEventfd)
{
    const auto hr = hello();
    const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    jal_msg_set_irq m{};
    m.hdr = {JAL_MSG_SET_IRQ, 0, sizeof m, 30};
    m.vector = 0;
    send_raw(&m, sizeof m, efd);
    EXPECT_EQ(recv_reply().status, JAL_STATUS_OK);
    chip_->host().raise_msi(hr.function, 0);
    std::uint64_t count = 0;
    EXPECT_EQ(read(efd, &count, sizeof count), 8);
    EXPECT_EQ(count, 1u);
    // Masked vectors stay silent.
    reg(JAL_MSG_REG_WRITE, JAL_REG_INTR_MASK, 1, JAL_MSG_F_ACK);
    chip_->host().raise_msi(hr.function, 0);
    EXPECT_EQ(read(efd, &count, sizeof count), -1);
    m.vector = JAL_MSIX_VECTORS;
    m.hdr.id = 31;
    send_raw(&m, sizeof m, efd);
    EXPECT_EQ(recv_reply().status, JAL_STATUS_OUT_OF_RANGE);
    close(efd);
}

TEST_F(ProtocolTest, DisconnectDetachesTheFunction)
{
    const auto hr = hello();
    EXPECT_EQ(
        chip_->host().fw_read(JAL_HOSTIF_FUNC_PRESENT - JAL_MGMT_PERIPH_BASE - JAL_MGMT_HOSTIF) >>
                hr.function &
            1,
        1u);
    shutdown(client_, SHUT_RDWR);
    server_.join();
    server_ = std::thread([] {});
    EXPECT_EQ(
        chip_->host().fw_read(JAL_HOSTIF_FUNC_PRESENT - JAL_MGMT_PERIPH_BASE - JAL_MGMT_HOSTIF) >>
                hr.function &
            1,
        0u);
}

TEST_F(ProtocolTest, ClientInfoNamesWhoHoldsAFunction)
{
    const auto hr = hello();
    auto ask = [&](std::uint32_t fn, jal_msg_client_info_reply& out) {
        jal_msg_client_info m{};
        m.hdr = {JAL_MSG_CLIENT_INFO, 0, sizeof m, ++id_};
        m.function = fn;
        send_raw(&m, sizeof m);
        out = {};
        return recv_reply(&out, sizeof out);
    };
    jal_msg_client_info_reply info{};
    auto r = ask(hr.function, info);
    EXPECT_EQ(r.status, JAL_STATUS_OK);
    EXPECT_EQ(r.hdr.size, sizeof(jal_msg_reply) + sizeof(jal_msg_client_info_reply));
    EXPECT_EQ(info.present, 1u);
    EXPECT_EQ(info.pid, static_cast<std::uint32_t>(getpid()));  // a socketpair's peer: us
    EXPECT_STREQ(info.client, "protocol-test");
    EXPECT_EQ(info.contexts, 0u);
    // The firmware publishes the count; the emulator passes it on.
    chip_->host().fw_write(0x100 + hr.function * 0x40 + JAL_FN_CONTEXTS, 3);
    ask(hr.function, info);
    EXPECT_EQ(info.contexts, 3u);

    EXPECT_EQ(ask((hr.function + 1) % JAL_MGMT_MAX_FUNCS, info).status, JAL_STATUS_OK);
    EXPECT_EQ(info.present, 0u);
    EXPECT_EQ(ask(JAL_MGMT_MAX_FUNCS, info).status, JAL_STATUS_OUT_OF_RANGE);
}

TEST_F(ProtocolTest, AResetMovesTheGenerationAndWakesEveryBoundVector)
{
    const auto hr = hello();
    (void)hr;
    const int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    jal_msg_set_irq m{};
    m.hdr = {JAL_MSG_SET_IRQ, 0, sizeof m, ++id_};
    m.vector = 5;
    send_raw(&m, sizeof m, efd);
    EXPECT_EQ(recv_reply().status, JAL_STATUS_OK);
    EXPECT_EQ(reg(JAL_MSG_REG_READ, JAL_REG_RESET_GENERATION).value, 0u);

    chip_->host().reset(/*chip_reset=*/false);  // as the watchdog does
    EXPECT_EQ(reg(JAL_MSG_REG_READ, JAL_REG_RESET_GENERATION).value, 1u);
    std::uint64_t count = 0;
    EXPECT_EQ(read(efd, &count, sizeof count), 8);
    EXPECT_EQ(count, 1u);
    chip_->host().reset(/*chip_reset=*/true);
    EXPECT_EQ(reg(JAL_MSG_REG_READ, JAL_REG_RESET_GENERATION).value, 2u);
    close(efd);
}
