#include "emu/gdb/rsp_commands.hpp"

#include "emu/gdb/rsp_framing.hpp"

#include <cstring>
#include <vector>

namespace jal::emu::gdb {

namespace {

constexpr const char* kError = "E01";
// Bytes one 'm' may ask for: the reply (two hex digits a byte) must fit the packet size we
// announce in qSupported.
constexpr std::uint64_t kMaxMemoryRead = PacketReader::kMaxPayload / 2;
// The remote number gdb's m-profile feature gives xpsr (regnum="25" in target_xml()).
constexpr unsigned kXpsrRemoteNumber = 25;

constexpr std::string_view kTargetXml = R"xml(<?xml version="1.0"?>
<!DOCTYPE target SYSTEM "gdb-target.dtd">
<target version="1.0">
  <architecture>arm</architecture>
  <feature name="org.gnu.gdb.arm.m-profile">
    <reg name="r0" bitsize="32" regnum="0"/>
    <reg name="r1" bitsize="32"/>
    <reg name="r2" bitsize="32"/>
    <reg name="r3" bitsize="32"/>
    <reg name="r4" bitsize="32"/>
    <reg name="r5" bitsize="32"/>
    <reg name="r6" bitsize="32"/>
    <reg name="r7" bitsize="32"/>
    <reg name="r8" bitsize="32"/>
    <reg name="r9" bitsize="32"/>
    <reg name="r10" bitsize="32"/>
    <reg name="r11" bitsize="32"/>
    <reg name="r12" bitsize="32"/>
    <reg name="sp" bitsize="32" type="data_ptr"/>
    <reg name="lr" bitsize="32"/>
    <reg name="pc" bitsize="32" type="code_ptr"/>
    <reg name="xpsr" bitsize="32" regnum="25"/>
  </feature>
</target>
)xml";

std::string to_hex_number(std::uint64_t v)
{
    static const char* hex = "0123456789abcdef";
    std::string out;
    do {
        out.insert(out.begin(), hex[v & 15]);
        v >>= 4;
    } while (v);
    return out;
}

bool starts_with(std::string_view s, std::string_view prefix)
{
    return s.substr(0, prefix.size()) == prefix;
}

// Register values travel as target-endian (little-endian) bytes in hex.
std::string register_hex(std::uint32_t v)
{
    const std::uint8_t b[4] = {static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v >> 8),
                               static_cast<std::uint8_t>(v >> 16),
                               static_cast<std::uint8_t>(v >> 24)};
    return to_hex(b);
}

std::optional<std::uint32_t> parse_register_hex(std::string_view hex)
{
    const auto bytes = from_hex(hex);
    if (!bytes || bytes->size() != 4) return std::nullopt;
    std::uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = v << 8 | (*bytes)[static_cast<std::size_t>(i)];
    return v;
}

std::optional<unsigned> register_index(std::string_view hex)
{
    const auto n = parse_hex_number(hex);
    if (!n) return std::nullopt;
    if (*n < kRegXpsr) return static_cast<unsigned>(*n);
    if (*n == kXpsrRemoteNumber) return kRegXpsr;
    return std::nullopt;
}

// "ADDR,LEN" -> (address, length); the address must fit the core's 32 bits.
std::optional<std::pair<std::uint32_t, std::uint64_t>> address_length(std::string_view args)
{
    const auto comma = args.find(',');
    if (comma == std::string_view::npos) return std::nullopt;
    const auto addr = parse_hex_number(args.substr(0, comma));
    const auto len = parse_hex_number(args.substr(comma + 1));
    if (!addr || !len || *addr > 0xffffffffull) return std::nullopt;
    return std::pair{static_cast<std::uint32_t>(*addr), *len};
}

// "Snn": the stop reply without registers (gdb reads them with 'g' afterwards).
std::string stop_reply(int signal)
{
    const std::uint8_t b = static_cast<std::uint8_t>(signal);
    return "S" + to_hex({&b, 1});
}

CommandResult answer(std::string reply, Resume resume = Resume::none)
{
    CommandResult r;
    r.reply = std::move(reply);
    r.resume = resume;
    return r;
}

}  // namespace

std::string_view target_xml()
{
    return kTargetXml;
}

CommandResult RspCommands::handle(std::string_view packet)
{
    if (packet.empty()) return answer({});
    const std::string_view args = packet.substr(1);
    switch (packet[0]) {
    case '?':
        return answer(stop_reply(target_.stop_signal()));
    case 'g': {
        std::string out;
        for (std::uint32_t v : target_.registers()) out += register_hex(v);
        return answer(out);
    }
    case 'G':
        return answer(write_all_registers(args));
    case 'p':
        return answer(read_register(args));
    case 'P':
        return answer(write_register(args));
    case 'm':
        return answer(read_memory(args));
    case 'M':
        return answer(write_memory(args));
    case 'Z':
    case 'z':
        return answer(breakpoint(packet, packet[0] == 'Z'));
    case 'c':
    case 's': {
        CommandResult r = answer({}, packet[0] == 'c' ? Resume::cont : Resume::step);
        if (!args.empty()) {
            const auto addr = parse_hex_number(args);
            if (!addr || *addr > 0xffffffffull) return answer(kError);
            r.resume_at = static_cast<std::uint32_t>(*addr);
        }
        return r;
    }
    case 'D':
        return answer("OK", Resume::detach);
    case 'k':
        return answer({}, Resume::kill);
    case 'H':  // one thread: every thread selection is fine
    case 'T':
        return answer("OK");
    case 'q':
    case 'Q':
        return answer(query(packet));
    case 'v':
        if (starts_with(packet, "vKill")) return answer("OK", Resume::detach);
        return answer({});  // vCont, vMustReplyEmpty, ...: gdb falls back to 'c' and 's'
    default:
        return answer({});
    }
}

std::string RspCommands::query(std::string_view packet)
{
    if (starts_with(packet, "qSupported"))
        return "PacketSize=" + to_hex_number(PacketReader::kMaxPayload) +
               ";qXfer:features:read+;QStartNoAckMode+";
    if (packet == "QStartNoAckMode") {
        no_ack_ = true;
        return "OK";
    }
    if (starts_with(packet, "qXfer:features:read:"))
        return features(packet.substr(std::strlen("qXfer:features:read:")));
    if (packet == "qAttached") return "1";  // detaching leaves the chip running
    if (packet == "qfThreadInfo") return "m1";
    if (packet == "qsThreadInfo") return "l";
    if (packet == "qC") return "QC1";
    if (starts_with(packet, "qSymbol")) return "OK";
    return {};
}

std::string RspCommands::read_register(std::string_view args)
{
    const auto index = register_index(args);
    if (!index) return kError;
    return register_hex(target_.registers()[*index]);
}

std::string RspCommands::write_register(std::string_view args)
{
    const auto eq = args.find('=');
    if (eq == std::string_view::npos) return kError;
    const auto index = register_index(args.substr(0, eq));
    const auto value = parse_register_hex(args.substr(eq + 1));
    if (!index || !value || !target_.write_register(*index, *value)) return kError;
    return "OK";
}

std::string RspCommands::write_all_registers(std::string_view hex)
{
    if (hex.size() != kNumRegisters * 8) return kError;
    Registers values{};
    for (unsigned i = 0; i < kNumRegisters; ++i) {
        const auto v = parse_register_hex(hex.substr(i * 8, 8));
        if (!v) return kError;
        values[i] = *v;
    }
    for (unsigned i = 0; i < kNumRegisters; ++i)
        if (!target_.write_register(i, values[i])) return kError;
    return "OK";
}

std::string RspCommands::read_memory(std::string_view args)
{
    const auto range = address_length(args);
    if (!range || range->second > kMaxMemoryRead) return kError;
    std::vector<std::uint8_t> bytes(range->second);
    if (!target_.read_memory(range->first, bytes)) return kError;
    return to_hex(bytes);
}

std::string RspCommands::write_memory(std::string_view args)
{
    const auto colon = args.find(':');
    if (colon == std::string_view::npos) return kError;
    const auto range = address_length(args.substr(0, colon));
    const auto bytes = from_hex(args.substr(colon + 1));
    if (!range || !bytes || bytes->size() != range->second) return kError;
    if (!target_.write_memory(range->first, *bytes)) return kError;
    return "OK";
}

// "Z0,ADDR,KIND" / "Z1,...": software and hardware breakpoints are the same thing here, an
// execution hook on ADDR. Watchpoints (Z2-Z4) are not supported: the empty reply says so.
std::string RspCommands::breakpoint(std::string_view packet, bool insert)
{
    if (packet.size() < 3 || (packet[1] != '0' && packet[1] != '1') || packet[2] != ',') return {};
    const auto range = address_length(packet.substr(3));
    if (!range) return kError;
    target_.set_breakpoint(range->first & ~1u, insert);
    return "OK";
}

std::string RspCommands::features(std::string_view args)
{
    const auto colon = args.find(':');
    if (colon == std::string_view::npos || args.substr(0, colon) != "target.xml") return "E00";
    const auto range = address_length(args.substr(colon + 1));
    if (!range) return kError;
    const std::string_view xml = target_xml();
    if (range->first >= xml.size()) return "l";
    const std::string_view part = xml.substr(range->first, range->second);
    const bool last = range->first + part.size() >= xml.size();
    return (last ? "l" : "m") + std::string(part);  // frame_packet() escapes it
}

}  // namespace jal::emu::gdb
