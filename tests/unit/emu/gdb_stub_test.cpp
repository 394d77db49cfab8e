// The GDB stub's packet layer (framing, checksums, escapes) and its command handling
// against a fake core: what gdb-multiarch sends, and what a broken or hostile client sends.
#include "emu/gdb/rsp_commands.hpp"
#include "emu/gdb/rsp_framing.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

namespace {

using namespace jal::emu::gdb;
using Kind = RspInput::Kind;

// A core with 64 KiB of memory at 0x20000000 and recorded breakpoints.
class FakeCore : public DebugTarget {
public:
    FakeCore()
    {
        for (unsigned i = 0; i < kNumRegisters; ++i) regs[i] = 0x11111111u * i;
    }
    Registers registers() override { return regs; }
    bool write_register(unsigned index, std::uint32_t value) override
    {
        if (index >= kNumRegisters) return false;
        regs[index] = value;
        return true;
    }
    bool read_memory(std::uint32_t address, std::span<std::uint8_t> out) override
    {
        if (!mapped(address, out.size())) return false;
        std::copy_n(memory.begin() + (address - kBase), out.size(), out.begin());
        return true;
    }
    bool write_memory(std::uint32_t address, std::span<const std::uint8_t> data) override
    {
        if (!mapped(address, data.size())) return false;
        std::copy(data.begin(), data.end(), memory.begin() + (address - kBase));
        return true;
    }
    void set_breakpoint(std::uint32_t address, bool present) override
    {
        if (present)
            breakpoints.insert(address);
        else
            breakpoints.erase(address);
    }
    int stop_signal() override { return signal; }

    static constexpr std::uint32_t kBase = 0x20000000;
    Registers regs{};
    std::vector<std::uint8_t> memory = std::vector<std::uint8_t>(0x10000);
    std::set<std::uint32_t> breakpoints;
    int signal = kSigTrap;

private:
    static bool mapped(std::uint32_t a, std::size_t n)
    {
        return a >= kBase && a - kBase + n <= 0x10000;
    }
};

std::string hex(std::uint64_t v)
{
    char buf[24];
    std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(v));
    return buf;
}

std::vector<RspInput> read_all(std::string_view bytes)
{
    PacketReader r;
    return r.feed(bytes);
}

// ------------------------------------------------------------------ framing

TEST(RspFraming, FramesWithModulo256Checksum)
{
    EXPECT_EQ(frame_packet("OK"), "$OK#9a");
    EXPECT_EQ(frame_packet(""), "$#00");
    EXPECT_EQ(frame_packet("g"), "$g#67");
}

TEST(RspFraming, EscapesReservedBytesAndChecksumsTheEscapedForm)
{
    // '}' 0x7d -> "}]", '#' -> "}\x03", '$' -> "}\x04", '*' -> "}\x0a".
    EXPECT_EQ(escape_binary("a}b#c$d*"), std::string("a}]b}\x03"
                                                     "c}\x04"
                                                     "d}\x0a"));
    const std::string framed = frame_packet("x#y");
    EXPECT_EQ(framed.substr(0, 5), std::string("$x}\x03y"));
    // Round trip: what we frame, a reader decodes to the original payload.
    const auto in = read_all(frame_packet("l<a>}$#*"));
    ASSERT_EQ(in.size(), 1u);
    EXPECT_EQ(in[0].kind, Kind::packet);
    EXPECT_EQ(in[0].payload, "l<a>}$#*");
}

TEST(RspFraming, ReadsPacketsAcksAndInterruptsFromOneStream)
{
    const auto in = read_all(std::string("+$g#67-") + '\x03' + "$m0,4#fd");
    ASSERT_EQ(in.size(), 5u);
    EXPECT_EQ(in[0].kind, Kind::ack);
    EXPECT_EQ(in[1].kind, Kind::packet);
    EXPECT_EQ(in[1].payload, "g");
    EXPECT_EQ(in[2].kind, Kind::nack);
    EXPECT_EQ(in[3].kind, Kind::interrupt);
    EXPECT_EQ(in[4].kind, Kind::packet);
    EXPECT_EQ(in[4].payload, "m0,4");
}

TEST(RspFraming, ReassemblesPacketsSplitAcrossReads)
{
    PacketReader r;
    EXPECT_TRUE(r.feed("$m0").empty());
    EXPECT_TRUE(r.feed(",4#f").empty());
    const auto in = r.feed("d");
    ASSERT_EQ(in.size(), 1u);
    EXPECT_EQ(in[0].payload, "m0,4");
}

TEST(RspFraming, BadChecksumsAndOverlongPacketsAreMalformed)
{
    EXPECT_EQ(read_all("$g#00")[0].kind, Kind::malformed);   // wrong sum
    EXPECT_EQ(read_all("$g#zz")[0].kind, Kind::malformed);   // not hex
    EXPECT_EQ(read_all("$g}#67")[0].kind, Kind::malformed);  // escape with nothing after it
    const std::string huge(PacketReader::kMaxPayload + 1, 'a');
    EXPECT_EQ(read_all(frame_packet(huge))[0].kind, Kind::malformed);
    // The reader recovers: the next packet is read normally.
    PacketReader r;
    r.feed("$g#00");
    const auto in = r.feed("$g#67");
    ASSERT_EQ(in.size(), 1u);
    EXPECT_EQ(in[0].kind, Kind::packet);
}

TEST(RspFraming, HexHelpersRejectWhatIsNotHex)
{
    EXPECT_EQ(to_hex(std::vector<std::uint8_t>{0x00, 0xab, 0x7f}), "00ab7f");
    EXPECT_EQ(from_hex("00Ab7f"), (std::vector<std::uint8_t>{0x00, 0xab, 0x7f}));
    EXPECT_FALSE(from_hex("abc"));
    EXPECT_FALSE(from_hex("zz"));
    EXPECT_EQ(parse_hex_number("20000000"), 0x20000000u);
    EXPECT_FALSE(parse_hex_number(""));
    EXPECT_FALSE(parse_hex_number("12345678123456781"));
    EXPECT_FALSE(parse_hex_number("-1"));
}

// ------------------------------------------------------------------ commands

TEST(RspCommands, AnnouncesTheTargetDescriptionAndReadsItInPieces)
{
    FakeCore core;
    RspCommands c(core);
    const std::string supported = c.handle("qSupported:swbreak+;hwbreak+").reply;
    EXPECT_NE(supported.find("qXfer:features:read+"), std::string::npos);
    EXPECT_NE(supported.find("PacketSize=4000"), std::string::npos);
    std::string xml;
    for (std::size_t off = 0;;) {
        const std::string r = c.handle("qXfer:features:read:target.xml:" + hex(off) + ",40").reply;
        ASSERT_FALSE(r.empty());
        xml += r.substr(1);
        off += r.size() - 1;
        if (r[0] == 'l') break;
        ASSERT_EQ(r[0], 'm');
    }
    EXPECT_EQ(xml, std::string(target_xml()));
    EXPECT_NE(xml.find("org.gnu.gdb.arm.m-profile"), std::string::npos);
    EXPECT_EQ(c.handle("qXfer:features:read:other.xml:0,40").reply, "E00");
}

TEST(RspCommands, ReadsAndWritesRegistersInTheGPacketOrder)
{
    FakeCore core;
    RspCommands c(core);
    core.regs[0] = 0x12345678;
    core.regs[kRegXpsr] = 0x01000000;
    const std::string g = c.handle("g").reply;
    ASSERT_EQ(g.size(), kNumRegisters * 8);
    EXPECT_EQ(g.substr(0, 8), "78563412");  // little-endian bytes
    EXPECT_EQ(g.substr(kRegXpsr * 8), "00000001");
    EXPECT_EQ(c.handle("p0").reply, "78563412");
    EXPECT_EQ(c.handle("p19").reply, "00000001");  // xpsr is gdb's register 25 (0x19)
    EXPECT_EQ(c.handle("p10").reply, "E01");       // 16-24 do not exist on this core
    EXPECT_EQ(c.handle("Pf=01470000").reply, "OK");
    EXPECT_EQ(core.regs[kRegPc], 0x4701u);
    EXPECT_EQ(c.handle("Pf=0147").reply, "E01");  // too short
    EXPECT_EQ(c.handle("Pzz=01470000").reply, "E01");

    std::string all;
    for (unsigned i = 0; i < kNumRegisters; ++i)  // register i holds i
        all += to_hex(std::vector<std::uint8_t>{static_cast<std::uint8_t>(i), 0, 0, 0});
    EXPECT_EQ(c.handle("G" + all).reply, "OK");
    EXPECT_EQ(core.regs[13], 13u);
    EXPECT_EQ(c.handle("G" + all.substr(2)).reply, "E01");
    EXPECT_EQ(core.regs[13], 13u);
}

TEST(RspCommands, ReadsAndWritesMemoryAndRefusesWhatIsNotThere)
{
    FakeCore core;
    RspCommands c(core);
    EXPECT_EQ(c.handle("M20000010,4:deadbeef").reply, "OK");
    EXPECT_EQ(core.memory[0x10], 0xde);
    EXPECT_EQ(core.memory[0x13], 0xef);
    EXPECT_EQ(c.handle("m20000010,4").reply, "deadbeef");
    EXPECT_EQ(c.handle("m40000000,4").reply, "E01");       // not mapped
    EXPECT_EQ(c.handle("m2000fffe,4").reply, "E01");       // runs off the end
    EXPECT_EQ(c.handle("m20000000,100000").reply, "E01");  // longer than a packet
    EXPECT_EQ(c.handle("m20000000").reply, "E01");
    EXPECT_EQ(c.handle("m1ffffffff,4").reply, "E01");  // beyond 32 bits
    EXPECT_EQ(c.handle("M20000010,4:dead").reply, "E01");
    EXPECT_EQ(c.handle("M20000010,2:zzzz").reply, "E01");
    EXPECT_EQ(core.memory[0x10], 0xde);
}

TEST(RspCommands, BreakpointsAreHooksAndWatchpointsAreUnsupported)
{
    FakeCore core;
    RspCommands c(core);
    EXPECT_EQ(c.handle("Z0,44f0,2").reply, "OK");
    EXPECT_EQ(c.handle("Z1,4789,2").reply, "OK");  // the Thumb bit is dropped
    EXPECT_EQ(core.breakpoints, (std::set<std::uint32_t>{0x44f0, 0x4788}));
    EXPECT_EQ(c.handle("z0,44f0,2").reply, "OK");
    EXPECT_EQ(core.breakpoints, (std::set<std::uint32_t>{0x4788}));
    EXPECT_EQ(c.handle("Z2,20000000,4").reply, "");  // watchpoint: not supported
    EXPECT_EQ(c.handle("Z0,zz,2").reply, "E01");
    EXPECT_EQ(c.handle("Z0").reply, "");
}

TEST(RspCommands, ResumeCommandsAreReturnedNotAnswered)
{
    FakeCore core;
    RspCommands c(core);
    EXPECT_EQ(c.handle("c").resume, Resume::cont);
    const CommandResult s = c.handle("s4788");
    EXPECT_EQ(s.resume, Resume::step);
    EXPECT_EQ(s.resume_at, 0x4788u);
    EXPECT_EQ(c.handle("cxyz").resume, Resume::none);
    EXPECT_EQ(c.handle("cxyz").reply, "E01");
    const CommandResult d = c.handle("D");
    EXPECT_EQ(d.resume, Resume::detach);
    EXPECT_EQ(d.reply, "OK");
    EXPECT_EQ(c.handle("k").resume, Resume::kill);
}

TEST(RspCommands, StopReasonAndSessionQueries)
{
    FakeCore core;
    RspCommands c(core);
    EXPECT_EQ(c.handle("?").reply, "S05");
    core.signal = kSigSegv;
    EXPECT_EQ(c.handle("?").reply, "S0b");
    EXPECT_FALSE(c.no_ack());
    EXPECT_EQ(c.handle("QStartNoAckMode").reply, "OK");
    EXPECT_TRUE(c.no_ack());
    EXPECT_EQ(c.handle("qAttached").reply, "1");
    EXPECT_EQ(c.handle("Hg0").reply, "OK");
    EXPECT_EQ(c.handle("vMustReplyEmpty").reply, "");
    EXPECT_EQ(c.handle("vCont?").reply, "");  // gdb falls back to 'c' and 's'
    EXPECT_EQ(c.handle("").reply, "");
    EXPECT_EQ(c.handle("\x01garbage").reply, "");
}

}  // namespace
