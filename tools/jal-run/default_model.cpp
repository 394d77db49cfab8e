#include "default_model.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include <jal/model/synthetic_gpt_oss.hpp>

namespace jal::run {

namespace fs = std::filesystem;

std::string default_model_path(bool quiet)
{
    fs::path dir;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
        dir = fs::path(x) / "jal";
    else if (const char* h = std::getenv("HOME"); h && *h)
        dir = fs::path(h) / ".cache" / "jal";
    else
        dir = fs::temp_directory_path() / "jal";
    fs::create_directories(dir);
    // The name carries everything that decides the bytes, so a changed default is a new file.
    const fs::path path =
        dir / fmt::format("jal-run-default-{}-seed{}.gguf", kDefaultPreset, kDefaultSeed);
    if (fs::exists(path)) return path.string();
    auto options = jal::model::synthetic_preset(kDefaultPreset);
    options->seed = kDefaultSeed;
    // The writer goes through a temporary file renamed at the end, so a concurrent or
    // interrupted run never leaves half a model here.
    auto summary = jal::model::write_synthetic_gpt_oss(path.string(), *options);
    if (!quiet)
        std::fprintf(stderr,
                     "jal-run: wrote the default model (synthetic '%s', seed %u, %.1f MB) to %s\n",
                     kDefaultPreset, kDefaultSeed, summary.file_bytes / 1e6, path.c_str());
    return path.string();
}

}  // namespace jal::run
