// jal-run's embedded default model: a small synthetic GPT-OSS GGUF written once from a
// fixed seed and cached outside the repository, so `jal-run` alone runs the whole stack.
#pragma once

#include <string>

namespace jal::run {

inline constexpr const char* kDefaultPreset = "small";
inline constexpr unsigned kDefaultSeed = 1;

// The cached file's path, writing it first if it is missing ($XDG_CACHE_HOME/jal, else
// ~/.cache/jal, else the temporary directory). `log` receives one line when it writes.
std::string default_model_path(bool quiet);

}  // namespace jal::run
