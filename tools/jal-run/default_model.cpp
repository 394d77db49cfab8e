#include "default_model.hpp"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include <jal/model/synthetic_gpt_oss.hpp>

#include "tools/common/o200k_ranks.hpp"

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
    // GPT-OSS's real vocabulary, from the ranks embedded in jal-run, so that text goes in
    // and comes out; a build without them (no JAL_TIKTOKEN_REF) falls back to token ids.
    const std::string_view ranks = jal::tools::o200k_ranks();
    // The name carries everything that decides the bytes, so a changed default is a new file.
    const fs::path path = dir / fmt::format("jal-run-default-{}{}-seed{}.gguf", kDefaultPreset,
                                            ranks.empty() ? "" : "-o200k", kDefaultSeed);
    if (fs::exists(path)) return path.string();
    auto options = jal::model::synthetic_preset(kDefaultPreset);
    options->seed = kDefaultSeed;
    if (!ranks.empty()) {
        options->vocab = jal::model::SyntheticVocab::o200k;
        options->o200k_ranks = ranks;
    }
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
