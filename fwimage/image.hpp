// Signed firmware images (include/jal/hw/fw_image.h): parsing, verification and signing,
// with ECDSA P-256 and SHA-256 from mbedTLS. Shared by the emulator's boot ROM, jalctl's
// host-side check and jal-fwsign; it depends on nothing else of the project.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "jal/hw/fw_image.h"

namespace jal::fwimage {

struct Check {
    jal_fw_image_error error = JAL_FW_IMAGE_OK;
    jal_fw_image_header header{};  // valid from the first check that got past the magic
    std::string detail;            // one sentence for a person: what is wrong and by how much

    bool ok() const { return error == JAL_FW_IMAGE_OK; }
};

// The structure alone (magic, format, lengths): no cryptography. What a fuzzer drives.
Check parse(std::span<const std::uint8_t> image);

// Everything: structure, header signature against `public_key_pem`, body hash, vector
// table, and rollback counter against `min_rollback` (the chip's fuses). Throws
// std::runtime_error only when the key itself cannot be read.
Check verify(std::span<const std::uint8_t> image, std::string_view public_key_pem,
             std::uint32_t min_rollback = 0);

struct SignInfo {
    std::uint32_t fw_version = 0;  // major << 16 | minor << 8 | patch
    std::uint32_t rollback = 0;
    std::string build;  // at most 31 characters
};
// Header + body, signed deterministically (RFC 6979): the same inputs give the same bytes.
// Throws std::runtime_error for an unreadable key or a body that cannot be an image.
std::vector<std::uint8_t> sign(std::span<const std::uint8_t> body, const SignInfo& info,
                               std::string_view private_key_pem);

// A new P-256 private key, PEM.
std::string generate_key_pem();
// The public half of a private (or public) key, PEM.
std::string public_key_pem(std::string_view key_pem);
// First 8 bytes of SHA-256 over the public key's DER form (the header's key_id).
std::array<std::uint8_t, 8> key_id(std::string_view key_pem);

// The development public key (keys/dev-firmware-key.pub.pem), which the emulator's boot ROM
// trusts. Development only: see keys/README.md.
std::string_view dev_public_key_pem();

// SHA-256 of `len` bytes (mbedTLS).
void sha256(const void* data, std::size_t len, std::uint8_t out[32]);

// "0.1.0" for major << 16 | minor << 8 | patch, and back (nullopt-like: false on bad text).
std::string version_text(std::uint32_t version);
bool parse_version(std::string_view text, std::uint32_t& version);

}  // namespace jal::fwimage
