#include <jal/isa/code_object.hpp>

#include <array>

namespace jal::isa {
namespace {

constexpr std::array<uint32_t, 256> make_table()
{
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
        t[i] = c;
    }
    return t;
}
constexpr auto kTable = make_table();

}  // namespace

uint32_t crc32(std::span<const uint8_t> bytes)
{
    uint32_t c = 0xffffffffu;
    for (uint8_t b : bytes) c = kTable[(c ^ b) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

}  // namespace jal::isa
