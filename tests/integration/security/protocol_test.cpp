// Small protocol defects a hostile client could use (docs/security.md, "Protocol").
#include <gtest/gtest.h>

#include <jal/emu/protocol.h>
#include <jal/hw/mgmt.h>
#include <jal/hw/status.h>

#include <sys/socket.h>

#include <memory>
#include <thread>
#include <vector>

#include "fixture/emu_process.hpp"
#include "raw_client.hpp"

namespace {

using namespace std::chrono_literals;
using jal::test::RawClient;

class ProtocolSecurityTest : public jal::test::EmuTest {};

// A zero-length packet reads like the end of the stream: the emulator ends the session,
// and must also close the socket (it used to stay open until the next client came).
TEST_F(ProtocolSecurityTest, ZeroLengthPacketEndsTheConnection)
{
    RawClient c(emu().socket_path());
    ASSERT_EQ(c.hello(), JAL_STATUS_OK);
    ASSERT_TRUE(c.send("", 0));
    EXPECT_TRUE(c.closed_by_peer());
}

TEST_F(ProtocolSecurityTest, VersionMismatchClosesTheConnection)
{
    RawClient c(emu().socket_path());
    EXPECT_EQ(c.hello("old", 0, (JAL_PROTO_VERSION_MAJOR + 1) << 16), JAL_STATUS_VERSION_MISMATCH);
    EXPECT_TRUE(c.closed_by_peer());
}

TEST_F(ProtocolSecurityTest, BusyClosesTheConnection)
{
    std::vector<std::unique_ptr<RawClient>> all;
    for (int i = 0; i < JAL_MGMT_MAX_FUNCS; ++i) {
        all.push_back(std::make_unique<RawClient>(emu().socket_path()));
        ASSERT_EQ(all.back()->hello("fn" + std::to_string(i)), JAL_STATUS_OK);
    }
    RawClient extra(emu().socket_path());
    EXPECT_EQ(extra.hello("one-too-many"), JAL_STATUS_BUSY);
    EXPECT_TRUE(extra.closed_by_peer());
}

TEST_F(ProtocolSecurityTest, HelloFlagsAreReservedMustBeZero)
{
    RawClient c(emu().socket_path());
    EXPECT_EQ(c.hello("flags", 1), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(c.hello("flags", 0x80000000u), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(c.hello("flags", 0), JAL_STATUS_OK);  // the connection is still usable
}

// Newlines and escape sequences in the client name would forge or hide log lines.
TEST_F(ProtocolSecurityTest, ClientNameIsEscapedInTheLog)
{
    RawClient c(emu().socket_path());
    ASSERT_EQ(c.hello("evil\n[fake] chip0: ok\x1b[2J"), JAL_STATUS_OK);
    std::string log;
    for (auto d = std::chrono::steady_clock::now() + 30s;
         log.find("attached as function") == std::string::npos &&
         std::chrono::steady_clock::now() < d;
         std::this_thread::sleep_for(1ms))
        log = emu().output();
    EXPECT_NE(log.find("evil\\x0a[fake] chip0: ok\\x1b[2J attached as function"), std::string::npos)
        << log;
    EXPECT_EQ(log.find("\n[fake]"), std::string::npos) << log;
    EXPECT_EQ(log.find('\x1b'), std::string::npos) << log;
}

}  // namespace
