// The checks every architecture reader shares (config_checks.hpp).
#include "config_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

namespace jal::model::detail {

const std::vector<TensorType>& f32_only()
{
    static const std::vector<TensorType> types = {TensorType::F32};
    return types;
}

const std::vector<TensorType>& matrix_types()
{
    static const std::vector<TensorType> types = {
        TensorType::F32,  TensorType::F16,  TensorType::BF16, TensorType::Q8_0, TensorType::MXFP4,
        TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
    };
    return types;
}

void bad_key(const GgufFile& f, std::string_view k, const std::string& msg)
{
    const GgufKv* kv = f.find_kv(k);
    if (kv)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("{}: key '{}' at offset {}: {}", f.name(), k, kv->offset, msg));
    throw Error(JAL_STATUS_INVALID_FIELD, fmt::format("{}: {}", f.name(), msg));
}

std::string shape_of(const std::vector<uint64_t>& ne)
{
    std::string s = "[";
    for (size_t i = 0; i < ne.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", ne[i]);
    return s + "]";
}

namespace {

void check_one(const GgufFile& f, const TensorSpec& s)
{
    const GgufTensor* t = f.find_tensor(s.name);
    if (!t)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("{}: missing tensor '{}' (expected shape {}{})", f.name(), s.name,
                                shape_of(s.ne), s.allowed_types.size() == 1 ? ", f32" : ""));
    const bool same_shape =
        t->n_dims == s.ne.size() && std::equal(s.ne.begin(), s.ne.end(), t->ne.begin());
    if (!same_shape)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("{}: tensor '{}' at offset {}: shape {}, expected {}", f.name(),
                                s.name, t->info_offset, t->shape_string(), shape_of(s.ne)));
    if (std::find(s.allowed_types.begin(), s.allowed_types.end(), t->type) ==
        s.allowed_types.end()) {
        std::string allowed;
        for (TensorType ty : s.allowed_types)
            allowed += fmt::format("{}{}", allowed.empty() ? "" : ", ", tensor_type_name(ty));
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("{}: tensor '{}' at offset {}: type {}, expected {}", f.name(),
                                s.name, t->info_offset, tensor_type_name(t->type), allowed));
    }
}

}  // namespace

void check_tensor_specs(const GgufFile& f, const std::vector<TensorSpec>& specs,
                        std::string_view arch)
{
    std::unordered_set<std::string_view> expected;
    for (const TensorSpec& s : specs) {
        expected.insert(s.name);
        check_one(f, s);
    }
    // llama.cpp refuses files with tensors it did not create ("wrong number of tensors").
    for (const GgufTensor& t : f.tensors())
        if (!expected.count(t.name))
            throw Error(JAL_STATUS_INVALID_FIELD,
                        fmt::format("{}: tensor '{}' at offset {}: not part of the {} architecture",
                                    f.name(), t.name, t.info_offset, arch));
}

uint32_t read_vocab_size(const GgufFile& f, std::string_view arch, uint32_t n_embd,
                         std::string_view tokenizer_model)
{
    const GgufTensor& embd = f.tensor("token_embd.weight");
    if (embd.n_dims != 2 || embd.ne[1] > UINT32_MAX)
        throw Error(
            JAL_STATUS_INVALID_FIELD,
            fmt::format(
                "{}: tensor 'token_embd.weight' at offset {}: shape {}, expected [{}, n_vocab]",
                f.name(), embd.info_offset, embd.shape_string(), n_embd));
    const auto n_vocab = static_cast<uint32_t>(embd.ne[1]);
    if (tokenizer_model == "none" || tokenizer_model == "no_vocab") {
        const std::string key = fmt::format("{}.vocab_size", arch);
        const auto n = f.find_u32(key);
        if (!n || *n != n_vocab)
            bad_key(f, key,
                    fmt::format(
                        "tokenizer 'none' needs {} = {} (the rows of token_embd.weight), found {}",
                        key, n_vocab, n ? fmt::format("{}", *n) : "none"));
    } else if (f.find_kv("tokenizer.ggml.tokens")) {
        const uint64_t n = f.array_size("tokenizer.ggml.tokens");
        if (n != n_vocab)
            bad_key(
                f, "tokenizer.ggml.tokens",
                fmt::format("{} tokens, expected {} (the rows of token_embd.weight)", n, n_vocab));
    } else {
        bad_key(f, "tokenizer.ggml.tokens", "missing key 'tokenizer.ggml.tokens'");
    }
    return n_vocab;
}

}  // namespace jal::model::detail
