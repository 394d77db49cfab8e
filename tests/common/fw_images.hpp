// Firmware images for tests: bodies (the build's own, or a tiny one that never boots), the
// development key, and the bad kinds the boot ROM must refuse. Needs JAL_SOURCE_DIR (for
// keys/) and, for build_body(), the signed build image's path.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "fwimage/image.hpp"

namespace jal::test {

using Bytes = std::vector<std::uint8_t>;

inline Bytes read_bytes(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    return {std::istreambuf_iterator<char>(in), {}};
}

inline void write_bytes(const std::string& path, const Bytes& bytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    if (!out.flush()) throw std::runtime_error("cannot write " + path);
}

inline std::string dev_private_key()
{
    const Bytes b = read_bytes(std::string(JAL_SOURCE_DIR) + "/keys/dev-firmware-key.pem");
    return {b.begin(), b.end()};
}

// The body of the build's signed image (what the chip runs from the factory).
inline Bytes build_body(const std::string& signed_image_path)
{
    Bytes image = read_bytes(signed_image_path);
    image.erase(image.begin(), image.begin() + JAL_FW_HEADER_SIZE);
    return image;
}

// A body with a valid vector table whose reset handler spins (`b .`) without touching the
// watchdog or the host interface: signed, it passes every check and never reaches READY.
inline Bytes hanging_body()
{
    Bytes body(128, 0);
    const std::uint32_t sp = JAL_MGMT_SRAM_BASE + JAL_MGMT_SRAM_SIZE, pc = 0x40 | 1;
    std::memcpy(body.data(), &sp, 4);
    std::memcpy(body.data() + 4, &pc, 4);
    body[0x40] = 0xfe;  // Thumb `b .` = 0xe7fe, little-endian
    body[0x41] = 0xe7;
    return body;
}

inline Bytes signed_image(const Bytes& body, const char* version, std::uint32_t rollback,
                          const std::string& key = dev_private_key())
{
    jal::fwimage::SignInfo info;
    if (!jal::fwimage::parse_version(version, info.fw_version))
        throw std::runtime_error(std::string("bad version ") + version);
    info.rollback = rollback;
    info.build = std::string("test-") + version;
    return jal::fwimage::sign(body, info, key);
}

inline Bytes flipped(Bytes image, std::size_t offset)
{
    image.at(offset) ^= 0x01;
    return image;
}

}  // namespace jal::test
