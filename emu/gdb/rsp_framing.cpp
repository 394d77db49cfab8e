#include "emu/gdb/rsp_framing.hpp"

namespace jal::emu::gdb {

namespace {
constexpr char kInterrupt = 0x03;

int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

bool reserved(char c)
{
    return c == '$' || c == '#' || c == '}' || c == '*';
}
}  // namespace

std::vector<RspInput> PacketReader::feed(std::string_view bytes)
{
    std::vector<RspInput> out;
    for (char c : bytes) byte(c, out);
    return out;
}

void PacketReader::byte(char c, std::vector<RspInput>& out)
{
    switch (state_) {
    case State::idle:
        if (c == '$') {
            state_ = State::body;
            payload_.clear();
            sum_ = 0;
            malformed_ = false;
        } else if (c == kInterrupt) {
            out.push_back({RspInput::Kind::interrupt, {}});
        } else if (c == '+') {
            out.push_back({RspInput::Kind::ack, {}});
        } else if (c == '-') {
            out.push_back({RspInput::Kind::nack, {}});
        }
        return;
    case State::body:
    case State::escaped:
        if (c == '#') {
            // A '#' right after '}' still ends the packet: the escape was the malformed part.
            if (state_ == State::escaped) malformed_ = true;
            state_ = State::checksum_hi;
            return;
        }
        sum_ = static_cast<std::uint8_t>(sum_ + static_cast<std::uint8_t>(c));
        if (state_ == State::body && c == '}') {
            state_ = State::escaped;
            return;
        }
        if (payload_.size() < kMaxPayload)
            payload_.push_back(state_ == State::escaped ? static_cast<char>(c ^ 0x20) : c);
        else
            malformed_ = true;
        state_ = State::body;
        return;
    case State::checksum_hi:
        checksum_ = hex_digit(c) < 0 ? -1 : hex_digit(c) << 4;
        state_ = State::checksum_lo;
        return;
    case State::checksum_lo:
        if (checksum_ >= 0 && hex_digit(c) >= 0)
            checksum_ |= hex_digit(c);
        else
            checksum_ = -1;
        finish(out);
        return;
    }
}

void PacketReader::finish(std::vector<RspInput>& out)
{
    state_ = State::idle;
    if (malformed_ || checksum_ != sum_) {
        out.push_back({RspInput::Kind::malformed, {}});
        return;
    }
    out.push_back({RspInput::Kind::packet, std::move(payload_)});
    payload_.clear();
}

std::string escape_binary(std::string_view data)
{
    std::string out;
    out.reserve(data.size());
    for (char c : data) {
        if (reserved(c)) {
            out.push_back('}');
            out.push_back(static_cast<char>(c ^ 0x20));
        } else {
            out.push_back(c);
        }
    }
    return out;
}

std::string frame_packet(std::string_view payload)
{
    static const char* hex = "0123456789abcdef";
    const std::string body = escape_binary(payload);
    std::uint8_t sum = 0;
    for (char c : body) sum = static_cast<std::uint8_t>(sum + static_cast<std::uint8_t>(c));
    std::string out;
    out.reserve(body.size() + 4);
    out.push_back('$');
    out += body;
    out.push_back('#');
    out.push_back(hex[sum >> 4]);
    out.push_back(hex[sum & 15]);
    return out;
}

std::string to_hex(std::span<const std::uint8_t> bytes)
{
    static const char* hex = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (std::uint8_t b : bytes) {
        out.push_back(hex[b >> 4]);
        out.push_back(hex[b & 15]);
    }
    return out;
}

std::optional<std::vector<std::uint8_t>> from_hex(std::string_view hex)
{
    if (hex.size() % 2) return std::nullopt;
    std::vector<std::uint8_t> out(hex.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i) {
        const int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
    }
    return out;
}

std::optional<std::uint64_t> parse_hex_number(std::string_view hex)
{
    if (hex.empty() || hex.size() > 16) return std::nullopt;
    std::uint64_t v = 0;
    for (char c : hex) {
        const int d = hex_digit(c);
        if (d < 0) return std::nullopt;
        v = v << 4 | static_cast<std::uint64_t>(d);
    }
    return v;
}

}  // namespace jal::emu::gdb
