// Bounded text helpers: no stdio in the firmware, so log lines and identify strings are
// assembled here into fixed buffers that can never overflow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace jal::fw::util {

// Copies src into dst, truncating, always NUL-terminating (dst must not be empty).
// Returns the number of characters copied.
std::size_t copy_string(std::span<char> dst, const char* src);

// A line being built in a fixed buffer; appends past capacity are dropped.
class LineBuffer {
public:
    static constexpr std::size_t kCapacity = 120;

    LineBuffer& str(const char* s);
    LineBuffer& dec(std::uint32_t v);
    LineBuffer& sdec(std::int32_t v);
    LineBuffer& hex(std::uint32_t v);  // 0x-prefixed, no leading zeros
    LineBuffer& ch(char c);

    const char* c_str() const { return buf_; }
    std::size_t size() const { return len_; }
    void clear()
    {
        len_ = 0;
        buf_[0] = '\0';
    }

private:
    char buf_[kCapacity + 1] = {};
    std::size_t len_ = 0;
};

}  // namespace jal::fw::util
