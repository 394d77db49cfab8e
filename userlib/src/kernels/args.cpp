// Args: the argument buffer, one little-endian 8-byte slot an argument.
#include <jal/kernels/dispatch.hpp>

#include <bit>
#include <cstring>

namespace jal::kernels {

Args::Args(std::initializer_list<uint64_t> words) : Args(std::span(words.begin(), words.size())) {}

Args::Args(std::span<const uint64_t> words)
{
    bytes_.reserve(words.size() * 8);
    for (uint64_t w : words) u64(w);
}

Args& Args::u64(uint64_t v)
{
    uint8_t slot[8];
    std::memcpy(slot, &v, sizeof slot);
    bytes_.insert(bytes_.end(), slot, slot + sizeof slot);
    return *this;
}

Args& Args::addr(uint64_t device_va)
{
    return u64(device_va);
}

Args& Args::f32(float v)
{
    return u64(std::bit_cast<uint32_t>(v));
}

}  // namespace jal::kernels
