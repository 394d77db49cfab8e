// The synthetic model writers' shared pieces (synthetic_common.hpp).
#include "synthetic_common.hpp"

#include <jal/isa/numerics.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <fstream>

namespace jal::model::detail {

uint64_t tensor_seed(uint64_t seed, std::string_view name)
{
    uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a of the name, mixed with the seed
    for (char c : name) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
    return h ^ (seed * 0x9e3779b97f4a7c15ULL);
}

bool ends_with(std::string_view s, std::string_view suffix)
{
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

void encode(TensorType type, const std::vector<float>& values, std::vector<std::byte>& bytes)
{
    jal_dtype dt = JAL_DT_F32;
    switch (type) {
    case TensorType::MXFP4:
        dt = JAL_DT_MXFP4;
        break;
    case TensorType::F16:
        dt = JAL_DT_F16;
        break;
    case TensorType::BF16:
        dt = JAL_DT_BF16;
        break;
    case TensorType::Q8_0:
        dt = JAL_DT_Q8_0;
        break;
    default:
        std::memcpy(bytes.data(), values.data(), bytes.size());
        return;
    }
    numerics::quantize_row(dt, values.data(), bytes.data(), values.size(), JAL_CVT_GGML);
}

namespace {

void write_data(GgufWriter& w, uint64_t seed, const std::vector<TensorSpec>& specs,
                const std::function<TensorDraw(const TensorSpec&)>& how, uint64_t total,
                const std::function<void(uint64_t, uint64_t)>& progress)
{
    uint64_t done = 0;
    std::vector<float> values;
    std::vector<std::byte> bytes;
    for (const TensorSpec& s : specs) {
        Rng rng{tensor_seed(seed, s.name)};
        const TensorDraw d = how(s);
        // One matrix (one expert, one head) at a time keeps memory small for large shapes.
        const uint64_t part = s.ne[0] * (s.ne.size() > 1 ? s.ne[1] : 1);
        const uint64_t parts = s.ne.size() > 2 ? s.ne[2] : 1;
        values.resize(part);
        bytes.resize(tensor_bytes(d.type, part));
        for (uint64_t p = 0; p < parts; ++p) {
            for (float& v : values) v = d.mean + d.std * rng.normal();
            encode(d.type, values, bytes);
            w.write_tensor_part(bytes);
            done += bytes.size();
            if (progress) progress(done, total);
        }
    }
}

}  // namespace

uint64_t write_synthetic_file(GgufWriter& w, const std::string& path, uint64_t seed,
                              const std::vector<TensorSpec>& specs,
                              const std::function<TensorDraw(const TensorSpec&)>& how,
                              const std::function<void(uint64_t, uint64_t)>& progress)
{
    uint64_t total = 0, parameters = 0;
    for (const TensorSpec& s : specs) {
        total += w.add_tensor(s.name, how(s).type, s.ne);
        uint64_t n = 1;
        for (uint64_t d : s.ne) n *= d;
        parameters += n;
    }
    // Written next to `path`, renamed into place when complete.
    const std::string tmp = path + ".tmp";
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(JAL_STATUS_IO_ERROR, fmt::format("{}: cannot create", tmp));
    try {
        w.begin(out);
        write_data(w, seed, specs, how, total, progress);
        w.finish();
        out.close();
        if (!out) throw Error(JAL_STATUS_IO_ERROR, fmt::format("{}: writing failed", tmp));
        if (std::rename(tmp.c_str(), path.c_str()) != 0)
            throw Error(JAL_STATUS_IO_ERROR, fmt::format("{}: cannot rename to {}", tmp, path));
    } catch (...) {
        std::remove(tmp.c_str());
        throw;
    }
    return parameters;
}

}  // namespace jal::model::detail
