// The GDB remote serial protocol's framing: "$payload#cs" packets with a modulo-256
// checksum, '}' escapes (byte ^ 0x20) for '$', '#', '}' and '*', the bare 0x03 interrupt
// byte and the '+'/'-' acknowledgements. Nothing here knows what a packet means
// (rsp_commands.hpp does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace jal::emu::gdb {

// One thing the debugger sent.
struct RspInput {
    enum class Kind {
        packet,     // a well-formed packet; payload holds it, unescaped
        interrupt,  // 0x03 outside a packet: halt the target
        ack,        // '+'
        nack,       // '-': resend the last packet
        malformed,  // bad checksum, or too long: answer '-' so the debugger resends
    };
    Kind kind;
    std::string payload;
};

// Turns the byte stream from the debugger into RspInputs. Bytes outside a packet other
// than the ones above are ignored, as gdb's own stubs do.
class PacketReader {
public:
    // Longest payload accepted; we announce it in qSupported (PacketSize, in hex).
    static constexpr std::size_t kMaxPayload = 0x4000;

    std::vector<RspInput> feed(std::string_view bytes);

private:
    enum class State { idle, body, escaped, checksum_hi, checksum_lo };
    void byte(char c, std::vector<RspInput>& out);
    void finish(std::vector<RspInput>& out);

    State state_ = State::idle;
    std::string payload_;
    std::uint8_t sum_ = 0;  // of the bytes as sent, escapes included
    int checksum_ = 0;
    bool malformed_ = false;  // too long, or an escape with nothing after it
};

// "$<escaped payload>#<checksum>".
std::string frame_packet(std::string_view payload);
// Escapes the bytes the framing reserves ('$', '#', '}', '*'); frame_packet() applies it to every
// payload, which gdb undoes for binary replies (qXfer) and never meets in textual ones.
std::string escape_binary(std::string_view data);

// Lower-case hex of `bytes`, in memory order.
std::string to_hex(std::span<const std::uint8_t> bytes);
// The bytes of an even-length hex string; nullopt if it is not one.
std::optional<std::vector<std::uint8_t>> from_hex(std::string_view hex);
// A hex number of at most 16 digits (addresses, lengths); nullopt if empty or not hex.
std::optional<std::uint64_t> parse_hex_number(std::string_view hex);

}  // namespace jal::emu::gdb
