#include "fwimage/image.hpp"

#include "fwimage/pk.hpp"

#include <mbedtls/bignum.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/sha256.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace jal::fwimage {

namespace {

Check fail(Check c, jal_fw_image_error e, std::string detail)
{
    c.error = e;
    c.detail = std::move(detail);
    return c;
}

bool all_zero(const std::uint8_t* p, std::size_t n)
{
    return std::all_of(p, p + n, [](std::uint8_t b) { return b == 0; });
}

// The core starts from the body's vector table: SP inside SRAM, a Thumb PC inside the body.
bool bootable(std::span<const std::uint8_t> body)
{
    std::uint32_t sp, pc;
    std::memcpy(&sp, body.data(), 4);
    std::memcpy(&pc, body.data() + 4, 4);
    return sp >= JAL_MGMT_SRAM_BASE && sp <= JAL_MGMT_SRAM_BASE + JAL_MGMT_SRAM_SIZE && (pc & 1) &&
           (pc & ~1u) < body.size();
}

bool signature_ok(const jal_fw_image_header& h, std::string_view public_key_pem)
{
    std::uint8_t digest[32];
    sha256(&h, JAL_FW_SIGNED_BYTES, digest);
    PublicKey key(public_key_pem);
    Mpi r, s;
    if (mbedtls_mpi_read_binary(&r.v, h.signature, 32) != 0 ||
        mbedtls_mpi_read_binary(&s.v, h.signature + 32, 32) != 0)
        return false;
    const mbedtls_ecp_keypair& ec = key.ec();
    return mbedtls_ecdsa_verify(const_cast<mbedtls_ecp_group*>(&ec.grp), digest, sizeof digest,
                                &ec.Q, &r.v, &s.v) == 0;
}

}  // namespace

void sha256(const void* data, std::size_t len, std::uint8_t out[32])
{
    if (mbedtls_sha256_ret(static_cast<const unsigned char*>(data), len, out, 0) != 0)
        throw std::runtime_error("SHA-256 failed");
}

Check parse(std::span<const std::uint8_t> image)
{
    Check c;
    std::uint32_t magic = 0;
    if (image.size() >= 4) std::memcpy(&magic, image.data(), 4);
    if (magic != JAL_FW_IMAGE_MAGIC)
        return fail(c, JAL_FW_IMAGE_NOT_SIGNED,
                    "no firmware image header (a raw or unsigned image? sign it with jal-fwsign)");
    if (image.size() < JAL_FW_HEADER_SIZE)
        return fail(c, JAL_FW_IMAGE_TRUNCATED,
                    "the header is cut short: " + std::to_string(image.size()) + " of " +
                        std::to_string(JAL_FW_HEADER_SIZE) + " bytes");
    std::memcpy(&c.header, image.data(), sizeof c.header);
    const jal_fw_image_header& h = c.header;
    if (h.format != JAL_FW_IMAGE_FORMAT || h.header_size != JAL_FW_HEADER_SIZE || h.flags != 0 ||
        h.reserved0 != 0 || !all_zero(h.reserved, sizeof h.reserved))
        return fail(c, JAL_FW_IMAGE_BAD_FORMAT,
                    "image format " + std::to_string(h.format) + ", header size " +
                        std::to_string(h.header_size) +
                        " or reserved fields not understood (format 1, 256 bytes, zeros)");
    if (h.body_len > JAL_MGMT_FLASH_SIZE)
        return fail(c, JAL_FW_IMAGE_TOO_LONG,
                    "the body of " + std::to_string(h.body_len) + " bytes is larger than the " +
                        std::to_string(JAL_MGMT_FLASH_SIZE) + "-byte flash");
    if (h.body_len < JAL_FW_MIN_BODY)
        return fail(c, JAL_FW_IMAGE_BAD_FORMAT,
                    "a body of " + std::to_string(h.body_len) +
                        " bytes cannot hold a vector table");
    const std::size_t want = std::size_t{JAL_FW_HEADER_SIZE} + h.body_len;
    if (image.size() < want)
        return fail(c, JAL_FW_IMAGE_TRUNCATED,
                    std::to_string(image.size()) + " of " + std::to_string(want) + " bytes");
    if (image.size() > want)
        return fail(c, JAL_FW_IMAGE_TOO_LONG,
                    std::to_string(image.size() - want) + " bytes after the announced end");
    return c;
}

Check verify(std::span<const std::uint8_t> image, std::string_view public_key_pem,
             std::uint32_t min_rollback)
{
    Check c = parse(image);
    if (!c.ok()) return c;
    const jal_fw_image_header& h = c.header;
    // The header first: its signature vouches for the body hash checked next.
    if (!signature_ok(h, public_key_pem))
        return fail(c, JAL_FW_IMAGE_BAD_SIGNATURE,
                    "the signature does not verify with the chip's key (signed with another "
                    "key, or the header was altered)");
    const auto body = image.subspan(JAL_FW_HEADER_SIZE);
    std::uint8_t digest[32];
    sha256(body.data(), body.size(), digest);
    if (std::memcmp(digest, h.body_sha256, sizeof digest) != 0)
        return fail(c, JAL_FW_IMAGE_BAD_HASH,
                    "the body does not match the signed hash: the image is corrupted");
    if (!bootable(body))
        return fail(c, JAL_FW_IMAGE_NOT_BOOTABLE, "the body has no valid Cortex-M vector table");
    if (h.rollback < min_rollback)
        return fail(c, JAL_FW_IMAGE_ROLLED_BACK,
                    "rollback counter " + std::to_string(h.rollback) +
                        " is below the chip's fuses (" + std::to_string(min_rollback) +
                        "): an older image may have known flaws");
    return c;
}

std::string version_text(std::uint32_t v)
{
    return std::to_string(v >> 16) + "." + std::to_string((v >> 8) & 0xff) + "." +
           std::to_string(v & 0xff);
}

bool parse_version(std::string_view text, std::uint32_t& version)
{
    std::uint32_t parts[3] = {0, 0, 0};
    int n = 0;
    bool digit = false;
    for (char ch : text) {
        if (ch == '.' && digit && n < 2) {
            ++n;
            digit = false;
        } else if (ch >= '0' && ch <= '9') {
            parts[n] = parts[n] * 10 + static_cast<std::uint32_t>(ch - '0');
            if (parts[n] > (n == 0 ? 0xffffu : 0xffu)) return false;
            digit = true;
        } else {
            return false;
        }
    }
    if (n != 2 || !digit) return false;
    version = parts[0] << 16 | parts[1] << 8 | parts[2];
    return true;
}

}  // namespace jal::fwimage
