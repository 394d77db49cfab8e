#include "firmware/util/text.hpp"

namespace jal::fw::util {

std::size_t copy_string(std::span<char> dst, const char* src)
{
    if (dst.empty()) return 0;
    std::size_t n = 0;
    while (src && src[n] != '\0' && n + 1 < dst.size()) {
        dst[n] = src[n];
        ++n;
    }
    dst[n] = '\0';
    return n;
}

LineBuffer& LineBuffer::ch(char c)
{
    if (len_ < kCapacity) {
        buf_[len_++] = c;
        buf_[len_] = '\0';
    }
    return *this;
}

LineBuffer& LineBuffer::str(const char* s)
{
    while (s && *s) ch(*s++);
    return *this;
}

LineBuffer& LineBuffer::dec(std::uint32_t v)
{
    char digits[10];
    int n = 0;
    do {
        digits[n++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v);
    while (n) ch(digits[--n]);
    return *this;
}

LineBuffer& LineBuffer::sdec(std::int32_t v)
{
    if (v < 0) {
        ch('-');
        return dec(static_cast<std::uint32_t>(-(static_cast<std::int64_t>(v))));
    }
    return dec(static_cast<std::uint32_t>(v));
}

LineBuffer& LineBuffer::hex(std::uint32_t v)
{
    str("0x");
    bool started = false;
    for (int shift = 28; shift >= 0; shift -= 4) {
        const std::uint32_t d = (v >> shift) & 0xf;
        if (d || started || shift == 0) {
            started = true;
            ch(static_cast<char>(d < 10 ? '0' + d : 'a' + d - 10));
        }
    }
    return *this;
}

}  // namespace jal::fw::util
