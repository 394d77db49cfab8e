#include "byte_unicode.hpp"

#include <array>
#include <cstdint>

#include "utf8.hpp"

namespace jal::model::tokenizer {

namespace {

// Printable Latin-1 bytes stand for themselves; the others (control characters, space,
// 0x7f-0xa0, 0xad) take the code points from 256 up, in byte order (GPT-2's
// bytes_to_unicode).
struct ByteMap {
    std::array<uint32_t, 256> to_cp{};
    std::array<int, 324> from_cp{};  // code points 0..323 -> byte, -1 if none
    ByteMap()
    {
        from_cp.fill(-1);
        uint32_t next = 256;
        for (uint32_t b = 0; b < 256; ++b) {
            const bool printable =
                (b >= '!' && b <= '~') || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
            to_cp[b] = printable ? b : next++;
            from_cp[to_cp[b]] = static_cast<int>(b);
        }
    }
};

const ByteMap& byte_map()
{
    static const ByteMap map;
    return map;
}

}  // namespace

std::string bytes_to_token_text(std::string_view bytes)
{
    const ByteMap& m = byte_map();
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char b : bytes) append_utf8(out, m.to_cp[b]);
    return out;
}

std::optional<std::string> token_text_to_bytes(std::string_view text)
{
    const ByteMap& m = byte_map();
    std::string out;
    out.reserve(text.size());
    size_t i = 0;
    while (i < text.size()) {
        const auto cp = next_code_point(text, i);
        if (!cp || *cp >= m.from_cp.size() || m.from_cp[*cp] < 0) return std::nullopt;
        out.push_back(static_cast<char>(m.from_cp[*cp]));
    }
    return out;
}

}  // namespace jal::model::tokenizer
