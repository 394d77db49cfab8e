#include "fwimage/image.hpp"

#include "fwimage/pk.hpp"

#include <mbedtls/ecdsa.h>
#include <mbedtls/md.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace jal::fwimage {

namespace {

std::string mbed_error(const char* what, int err)
{
    return std::string(what) + " (mbedTLS error -0x" + [err] {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%04x", static_cast<unsigned>(-err));
        return std::string(buf);
    }() + ")";
}

}  // namespace

PublicKey::PublicKey(std::string_view pem, bool want_private)
{
    mbedtls_pk_init(&pk_);
    // mbedTLS parses PEM only from a NUL-terminated buffer whose length counts the NUL.
    const std::string text(pem);
    const auto* p = reinterpret_cast<const unsigned char*>(text.c_str());
    int err = mbedtls_pk_parse_key(&pk_, p, text.size() + 1, nullptr, 0);
    if (err != 0 && !want_private) {
        mbedtls_pk_free(&pk_);
        mbedtls_pk_init(&pk_);
        err = mbedtls_pk_parse_public_key(&pk_, p, text.size() + 1);
    }
    if (err != 0) {
        mbedtls_pk_free(&pk_);
        throw std::runtime_error(
            mbed_error(want_private ? "not a PEM private key" : "not a PEM key", err));
    }
    if (!mbedtls_pk_can_do(&pk_, MBEDTLS_PK_ECKEY) ||
        mbedtls_pk_ec(pk_)->grp.id != MBEDTLS_ECP_DP_SECP256R1) {
        mbedtls_pk_free(&pk_);
        throw std::runtime_error("the key is not an ECDSA P-256 (prime256v1) key");
    }
}

Random::Random()
{
    mbedtls_entropy_init(&entropy_);
    mbedtls_ctr_drbg_init(&drbg_);
    static const unsigned char kPersonal[] = "jal-fwsign";
    const int err = mbedtls_ctr_drbg_seed(&drbg_, mbedtls_entropy_func, &entropy_, kPersonal,
                                          sizeof kPersonal - 1);
    if (err != 0) {
        mbedtls_ctr_drbg_free(&drbg_);
        mbedtls_entropy_free(&entropy_);
        throw std::runtime_error(mbed_error("cannot seed the random generator", err));
    }
}

Random::~Random()
{
    mbedtls_ctr_drbg_free(&drbg_);
    mbedtls_entropy_free(&entropy_);
}

std::array<std::uint8_t, 8> key_id(std::string_view key_pem)
{
    PublicKey key(key_pem);
    unsigned char der[256];
    const int n = mbedtls_pk_write_pubkey_der(&key.pk(), der, sizeof der);
    if (n <= 0) throw std::runtime_error(mbed_error("cannot encode the public key", n));
    std::uint8_t digest[32];
    sha256(der + sizeof der - n, static_cast<std::size_t>(n), digest);
    std::array<std::uint8_t, 8> id;
    std::memcpy(id.data(), digest, id.size());
    return id;
}

std::string public_key_pem(std::string_view key_pem)
{
    PublicKey key(key_pem);
    unsigned char buf[512];
    const int err = mbedtls_pk_write_pubkey_pem(&key.pk(), buf, sizeof buf);
    if (err != 0) throw std::runtime_error(mbed_error("cannot write the public key", err));
    return reinterpret_cast<const char*>(buf);
}

std::string generate_key_pem()
{
    Random rng;
    mbedtls_pk_context pk;
    mbedtls_pk_init(&pk);
    int err = mbedtls_pk_setup(&pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
    if (err == 0)
        err = mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(pk),
                                  mbedtls_ctr_drbg_random, rng.drbg());
    unsigned char buf[512];
    if (err == 0) err = mbedtls_pk_write_key_pem(&pk, buf, sizeof buf);
    mbedtls_pk_free(&pk);
    if (err != 0) throw std::runtime_error(mbed_error("cannot generate a P-256 key", err));
    return reinterpret_cast<const char*>(buf);
}

std::vector<std::uint8_t> sign(std::span<const std::uint8_t> body, const SignInfo& info,
                               std::string_view private_key_pem)
{
    if (body.size() < JAL_FW_MIN_BODY || body.size() > JAL_MGMT_FLASH_SIZE)
        throw std::runtime_error("a firmware body must be " + std::to_string(JAL_FW_MIN_BODY) +
                                 " to " + std::to_string(JAL_MGMT_FLASH_SIZE) + " bytes, not " +
                                 std::to_string(body.size()));
    if (info.build.size() >= sizeof(jal_fw_image_header::build))
        throw std::runtime_error("build identifier longer than 31 characters: " + info.build);
    jal_fw_image_header h{};
    h.magic = JAL_FW_IMAGE_MAGIC;
    h.format = JAL_FW_IMAGE_FORMAT;
    h.header_size = JAL_FW_HEADER_SIZE;
    h.fw_version = info.fw_version;
    h.rollback = info.rollback;
    h.body_len = static_cast<std::uint32_t>(body.size());
    sha256(body.data(), body.size(), h.body_sha256);
    const auto id = key_id(private_key_pem);
    std::memcpy(h.key_id, id.data(), id.size());
    std::memcpy(h.build, info.build.data(), info.build.size());

    PublicKey key(private_key_pem, true);
    std::uint8_t digest[32];
    sha256(&h, JAL_FW_SIGNED_BYTES, digest);
    Mpi r, s;
    Random rng;
    mbedtls_ecp_keypair& ec = *mbedtls_pk_ec(key.pk());
    int err = mbedtls_ecdsa_sign_det_ext(&ec.grp, &r.v, &s.v, &ec.d, digest, sizeof digest,
                                         MBEDTLS_MD_SHA256, mbedtls_ctr_drbg_random, rng.drbg());
    if (err == 0) err = mbedtls_mpi_write_binary(&r.v, h.signature, 32);
    if (err == 0) err = mbedtls_mpi_write_binary(&s.v, h.signature + 32, 32);
    if (err != 0) throw std::runtime_error(mbed_error("ECDSA signing failed", err));

    std::vector<std::uint8_t> image(sizeof h + body.size());
    std::memcpy(image.data(), &h, sizeof h);
    std::memcpy(image.data() + sizeof h, body.data(), body.size());
    return image;
}

}  // namespace jal::fwimage
