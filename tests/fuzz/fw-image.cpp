// fuzz-fw-image: the signed firmware image checks (fwimage/: header parsing, lengths,
// signature, hash, vector table, rollback) that the emulator's boot ROM and jalctl run on
// anything a host sends as firmware.
//
// Input: one byte of rollback fuses, then the image. Seeds (make-fuzz-seeds) are images
// signed with the development key, so mutations reach every check, including an accepted
// image.
//
// Checks: the verdict is one of the documented reasons, with a detail exactly when it
// refuses; verify() refuses everything parse() refuses, for the same reason; a parsed image
// is exactly header + body_len bytes with the format's fixed fields; an accepted image also
// has a body that matches its hash, a counter at or above the fuses, and is accepted again
// when the fuses equal its counter and refused as rolled back above it.
#include <cstdint>
#include <cstring>
#include <span>

#include "fuzz_check.hpp"
#include "fwimage/image.hpp"

namespace {

void check_parsed(const jal::fwimage::Check& c, std::span<const std::uint8_t> image)
{
    const jal_fw_image_header& h = c.header;
    FUZZ_CHECK(image.size() == JAL_FW_HEADER_SIZE + std::size_t{h.body_len});
    FUZZ_CHECK(h.magic == JAL_FW_IMAGE_MAGIC && h.format == JAL_FW_IMAGE_FORMAT &&
               h.header_size == JAL_FW_HEADER_SIZE && h.flags == 0);
    FUZZ_CHECK(h.body_len >= JAL_FW_MIN_BODY && h.body_len <= JAL_MGMT_FLASH_SIZE);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size < 1) return 0;
    const std::uint32_t fuses = data[0];
    const std::span<const std::uint8_t> image(data + 1, size - 1);
    const auto key = jal::fwimage::dev_public_key_pem();

    const jal::fwimage::Check parsed = jal::fwimage::parse(image);
    const jal::fwimage::Check full = jal::fwimage::verify(image, key, fuses);
    FUZZ_CHECK(full.error <= JAL_FW_IMAGE_NOT_BOOTABLE);
    FUZZ_CHECK(full.ok() == full.detail.empty());
    FUZZ_CHECK(parsed.ok() == parsed.detail.empty());
    if (!parsed.ok()) {
        FUZZ_CHECK(full.error == parsed.error);
        return 0;
    }
    check_parsed(parsed, image);
    if (!full.ok()) return 0;
    FUZZ_CHECK(full.header.rollback >= fuses);
    std::uint8_t digest[32];
    jal::fwimage::sha256(image.data() + JAL_FW_HEADER_SIZE, full.header.body_len, digest);
    FUZZ_CHECK(std::memcmp(digest, full.header.body_sha256, sizeof digest) == 0);
    FUZZ_CHECK(jal::fwimage::verify(image, key, full.header.rollback).ok());
    if (full.header.rollback < 0xffffffffu)
        FUZZ_CHECK(jal::fwimage::verify(image, key, full.header.rollback + 1).error ==
                   JAL_FW_IMAGE_ROLLED_BACK);
    return 0;
}
