// jal-fwsign: signs firmware images (include/jal/hw/fw_image.h), checks them, makes keys.
// The build signs build/bin/jal-fw.bin with it and the development key (keys/README.md).
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "fwimage/image.hpp"
#include "tools/common/version.hpp"

namespace {

std::vector<std::uint8_t> read_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open");
    return {std::istreambuf_iterator<char>(in), {}};
}

std::string read_text(const std::string& path)
{
    const auto bytes = read_file(path);
    return {bytes.begin(), bytes.end()};
}

void write_file(const std::string& path, const void* data, std::size_t len, mode_t mode)
{
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw std::runtime_error(tmp + ": cannot create");
        out.write(static_cast<const char*>(data), static_cast<std::streamsize>(len));
        if (!out.flush()) throw std::runtime_error(tmp + ": write failed");
    }
    chmod(tmp.c_str(), mode);
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
        throw std::runtime_error(path + ": cannot replace");
}

struct SignArgs {
    std::string key, version = "0.0.0", build, in, out;
    std::uint32_t rollback = 0;
};

int run_sign(const SignArgs& a)
{
    jal::fwimage::SignInfo info;
    if (!jal::fwimage::parse_version(a.version, info.fw_version))
        throw std::runtime_error("--version wants MAJOR.MINOR.PATCH (minor and patch up to 255), "
                                 "not '" +
                                 a.version + "'");
    info.rollback = a.rollback;
    info.build = a.build;
    const auto image = jal::fwimage::sign(read_file(a.in), info, read_text(a.key));
    write_file(a.out, image.data(), image.size(), 0644);
    return 0;
}

struct VerifyArgs {
    std::string key, image;
    std::uint32_t min_rollback = 0;
    bool json = false;
};

int run_verify(const VerifyArgs& a)
{
    const std::string pem =
        a.key.empty() ? std::string(jal::fwimage::dev_public_key_pem()) : read_text(a.key);
    const auto c = jal::fwimage::verify(read_file(a.image), pem, a.min_rollback);
    const auto& h = c.header;
    const bool have_header =
        c.error != JAL_FW_IMAGE_NOT_SIGNED && !(c.error == JAL_FW_IMAGE_TRUNCATED && h.magic == 0);
    if (a.json) {
        nlohmann::json j = {{"image", a.image},
                            {"ok", c.ok()},
                            {"error", c.ok() ? "" : jal_fw_image_error_name(c.error)},
                            {"detail", c.detail}};
        if (have_header)
            j["header"] = {{"version", jal::fwimage::version_text(h.fw_version)},
                           {"rollback", h.rollback},
                           {"body_bytes", h.body_len},
                           {"build", std::string(h.build, strnlen(h.build, sizeof h.build))}};
        std::cout << j.dump(2) << '\n';
    } else if (c.ok()) {
        std::cout << fmt::format("{}: ok: version {}, rollback {}, {} body bytes, build {}\n",
                                 a.image, jal::fwimage::version_text(h.fw_version), h.rollback,
                                 h.body_len,
                                 std::string(h.build, strnlen(h.build, sizeof h.build)));
    } else {
        std::cerr << fmt::format("jal-fwsign: {}: rejected: {}: {}\n", a.image,
                                 jal_fw_image_error_name(c.error), c.detail);
    }
    return c.ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv)
{
    CLI::App app{"jal-fwsign: sign and check Jalapeno firmware images (ECDSA P-256, SHA-256).\n"
                 "keys/dev-firmware-key.pem is a development key: see keys/README.md."};
    app.set_version_flag("--version", jal::tools::version_text("jal-fwsign"));
    app.require_subcommand(1);

    SignArgs s;
    auto* sign = app.add_subcommand("sign", "put a signed header in front of a raw image");
    sign->add_option("--key", s.key, "private key, PEM (P-256)")->required();
    sign->add_option("--version", s.version, "image version MAJOR.MINOR.PATCH")->required();
    sign->add_option("--rollback", s.rollback,
                     "rollback counter: chips whose fuses are above it refuse the image")
        ->required();
    sign->add_option("--build", s.build, "build identifier (up to 31 characters)");
    sign->add_option("body", s.in, "raw image (flash contents, vector table first)")->required();
    sign->add_option("out", s.out, "signed image to write")->required();

    VerifyArgs v;
    auto* verify = app.add_subcommand("verify", "check an image as the chip's boot ROM would");
    verify->add_option("--key", v.key, "public key, PEM (default: the development key)");
    verify->add_option("--min-rollback", v.min_rollback, "the chip's rollback fuses");
    verify->add_flag("--json", v.json, "one JSON document: ok, error, detail, header");
    verify->add_option("image", v.image, "signed image")->required();

    std::string key_out;
    auto* genkey = app.add_subcommand("genkey", "make a new P-256 private key (PEM, mode 0600)");
    genkey->add_option("out", key_out, "file to create; an existing file is not replaced")
        ->required();
    CLI11_PARSE(app, argc, argv);

    try {
        if (*sign) return run_sign(s);
        if (*verify) return run_verify(v);
        struct stat st;
        if (stat(key_out.c_str(), &st) == 0)
            throw std::runtime_error(key_out + " exists; not replacing a key");
        const std::string pem = jal::fwimage::generate_key_pem();
        write_file(key_out, pem.data(), pem.size(), 0600);
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "jal-fwsign: " << e.what() << '\n';
        return 1;
    }
}
