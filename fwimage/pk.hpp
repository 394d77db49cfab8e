// RAII holders for the mbedTLS objects fwimage uses (library-internal).
#pragma once

#include <mbedtls/bignum.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/ecp.h>
#include <mbedtls/entropy.h>
#include <mbedtls/pk.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace jal::fwimage {

struct Mpi {
    mbedtls_mpi v;
    Mpi() { mbedtls_mpi_init(&v); }
    ~Mpi() { mbedtls_mpi_free(&v); }
    Mpi(const Mpi&) = delete;
    Mpi& operator=(const Mpi&) = delete;
};

// A P-256 key from PEM: a private key ("EC PRIVATE KEY" or PKCS#8) when `want_private`,
// else a public key (or the public half of a private one). Throws std::runtime_error.
// Parsed per use: an mbedTLS group caches precomputed points and is not safe to share
// between threads.
class PublicKey {
public:
    explicit PublicKey(std::string_view pem, bool want_private = false);
    ~PublicKey() { mbedtls_pk_free(&pk_); }
    PublicKey(const PublicKey&) = delete;
    PublicKey& operator=(const PublicKey&) = delete;

    mbedtls_pk_context& pk() { return pk_; }
    const mbedtls_ecp_keypair& ec() const { return *mbedtls_pk_ec(pk_); }

private:
    mbedtls_pk_context pk_;
};

// A seeded CTR-DRBG (key generation, and blinding in deterministic signatures).
class Random {
public:
    Random();
    ~Random();
    Random(const Random&) = delete;
    Random& operator=(const Random&) = delete;
    mbedtls_ctr_drbg_context* drbg() { return &drbg_; }

private:
    mbedtls_entropy_context entropy_;
    mbedtls_ctr_drbg_context drbg_;
};

}  // namespace jal::fwimage
