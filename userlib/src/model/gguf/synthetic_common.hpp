// What the synthetic model writers (synthetic_gpt_oss.cpp, synthetic_deepseek.cpp) share:
// the seeded generator, value encoding with ggml's roundings, and writing the file through
// a temporary one.
#pragma once

#include <jal/model/gguf.hpp>
#include <jal/model/gpt_oss_config.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace jal::model::detail {

// splitmix64: tiny, fully specified, so a seed gives the same model on every host and
// standard library (std::normal_distribution is implementation-defined).
struct Rng {
    uint64_t state;
    uint64_t next()
    {
        uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }  // (0, 1)
    float normal()
    {
        // Box-Muller; one value per call keeps the stream simple.
        const double u1 = uniform(), u2 = uniform();
        return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                                  std::cos(6.283185307179586 * u2));
    }
};

// Each tensor's own stream: FNV-1a of its name mixed with the seed.
JAL_HIDDEN uint64_t tensor_seed(uint64_t seed, std::string_view name);

JAL_HIDDEN bool ends_with(std::string_view s, std::string_view suffix);

// F32 values to a tensor type's bytes, with ggml's roundings (jal::numerics reproduces
// them bit for bit: tests/reference/ggml).
JAL_HIDDEN void encode(TensorType type, const std::vector<float>& values,
                       std::vector<std::byte>& bytes);

// How one tensor is drawn (mean + std * N(0, 1)) and stored.
struct TensorDraw {
    float mean;
    float std;
    TensorType type;
};

// Declares `specs` (each drawn and stored as `how` says), writes the file to `path` through
// `path`.tmp renamed at the end, one matrix at a time, reporting bytes written against the
// total. Returns the parameter count.
JAL_HIDDEN uint64_t write_synthetic_file(
    GgufWriter& w, const std::string& path, uint64_t seed, const std::vector<TensorSpec>& specs,
    const std::function<TensorDraw(const TensorSpec&)>& how,
    const std::function<void(uint64_t done, uint64_t total)>& progress);

}  // namespace jal::model::detail
