// The image format and its checks (fwimage/): every kind of bad image gets its own reason.
#include <gtest/gtest.h>

#include "common/fw_images.hpp"

namespace {

using jal::test::Bytes;
using jal::test::flipped;
using jal::test::hanging_body;
using jal::test::signed_image;
namespace fwi = jal::fwimage;

jal_fw_image_error verdict(const Bytes& image, std::uint32_t fuses = 0)
{
    return fwi::verify(image, fwi::dev_public_key_pem(), fuses).error;
}

TEST(FwImage, ASignedImageVerifiesWithItsHeader)
{
    const Bytes body = hanging_body();
    const Bytes image = signed_image(body, "1.2.3", 7);
    ASSERT_EQ(image.size(), JAL_FW_HEADER_SIZE + body.size());
    const fwi::Check c = fwi::verify(image, fwi::dev_public_key_pem(), 7);
    ASSERT_TRUE(c.ok()) << c.detail;
    EXPECT_EQ(c.header.fw_version, 1u << 16 | 2u << 8 | 3u);
    EXPECT_EQ(c.header.rollback, 7u);
    EXPECT_EQ(c.header.body_len, body.size());
    EXPECT_STREQ(c.header.build, "test-1.2.3");
    const auto id = fwi::key_id(std::string(fwi::dev_public_key_pem()));
    EXPECT_EQ(0, std::memcmp(c.header.key_id, id.data(), id.size()));
}

TEST(FwImage, SigningIsDeterministic)
{
    EXPECT_EQ(signed_image(hanging_body(), "0.1.0", 1), signed_image(hanging_body(), "0.1.0", 1));
}

TEST(FwImage, TheCommittedPublicKeyIsTheDevelopmentKeysPublicHalf)
{
    EXPECT_EQ(fwi::public_key_pem(jal::test::dev_private_key()),
              std::string(fwi::dev_public_key_pem()));
}

TEST(FwImage, EachBadKindIsRefusedWithItsReason)
{
    const Bytes body = hanging_body();
    const Bytes good = signed_image(body, "0.2.0", 2);
    const Bytes other_key = signed_image(body, "0.2.0", 2, fwi::generate_key_pem());
    EXPECT_EQ(verdict(body), JAL_FW_IMAGE_NOT_SIGNED);  // a raw body
    EXPECT_EQ(verdict({}), JAL_FW_IMAGE_NOT_SIGNED);
    EXPECT_EQ(verdict(Bytes(good.begin(), good.begin() + 100)), JAL_FW_IMAGE_TRUNCATED);
    EXPECT_EQ(verdict(Bytes(good.begin(), good.end() - 1)), JAL_FW_IMAGE_TRUNCATED);
    Bytes longer = good;
    longer.push_back(0);
    EXPECT_EQ(verdict(longer), JAL_FW_IMAGE_TOO_LONG);
    EXPECT_EQ(verdict(flipped(good, good.size() - 1)), JAL_FW_IMAGE_BAD_HASH);
    EXPECT_EQ(verdict(flipped(good, JAL_FW_HEADER_SIZE)), JAL_FW_IMAGE_BAD_HASH);
    EXPECT_EQ(verdict(flipped(good, offsetof(jal_fw_image_header, fw_version))),
              JAL_FW_IMAGE_BAD_SIGNATURE);
    EXPECT_EQ(verdict(flipped(good, offsetof(jal_fw_image_header, body_sha256))),
              JAL_FW_IMAGE_BAD_SIGNATURE);
    EXPECT_EQ(verdict(flipped(good, offsetof(jal_fw_image_header, signature) + 5)),
              JAL_FW_IMAGE_BAD_SIGNATURE);
    EXPECT_EQ(verdict(flipped(good, offsetof(jal_fw_image_header, reserved))),
              JAL_FW_IMAGE_BAD_FORMAT);
    EXPECT_EQ(verdict(other_key), JAL_FW_IMAGE_BAD_SIGNATURE);
    EXPECT_EQ(verdict(good, 3), JAL_FW_IMAGE_ROLLED_BACK);
    EXPECT_EQ(verdict(good, 2), JAL_FW_IMAGE_OK);
    Bytes no_vectors = body;
    no_vectors[4] = 0;  // an even (ARM-mode) reset vector
    EXPECT_EQ(verdict(signed_image(no_vectors, "0.2.0", 2)), JAL_FW_IMAGE_NOT_BOOTABLE);
}

TEST(FwImage, AnotherKeyVerifiesOnlyItsOwnImages)
{
    const std::string key = fwi::generate_key_pem();
    const Bytes image = signed_image(hanging_body(), "0.2.0", 2, key);
    EXPECT_TRUE(fwi::verify(image, fwi::public_key_pem(key)).ok());
    EXPECT_FALSE(
        fwi::verify(signed_image(hanging_body(), "0.2.0", 2), fwi::public_key_pem(key)).ok());
}

TEST(FwImage, BadKeysAndBodiesAreErrorsNotCrashes)
{
    EXPECT_THROW(fwi::verify(signed_image(hanging_body(), "0.2.0", 2), "not a key"),
                 std::runtime_error);
    EXPECT_THROW(signed_image(Bytes(10, 0), "0.2.0", 2), std::runtime_error);
    EXPECT_THROW(signed_image(Bytes(JAL_MGMT_FLASH_SIZE + 1, 0), "0.2.0", 2), std::runtime_error);
}

TEST(FwImage, VersionsParseAndPrint)
{
    std::uint32_t v = 0;
    EXPECT_TRUE(fwi::parse_version("2.10.255", v));
    EXPECT_EQ(v, 2u << 16 | 10u << 8 | 255u);
    EXPECT_EQ(fwi::version_text(v), "2.10.255");
    for (const char* bad : {"", "1", "1.2", "1.2.3.4", "1.256.0", "a.b.c", "1..2", "1.2."})
        EXPECT_FALSE(fwi::parse_version(bad, v)) << bad;
}

}  // namespace
