#include "gguf_test_util.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace jal::model::test {

std::vector<std::byte> write_to_bytes(GgufWriter& w,
                                      std::function<std::vector<std::byte>(size_t, uint64_t)> data)
{
    std::ostringstream out;
    w.begin(out);
    for (size_t i = 0; !w.next_tensor().empty(); ++i) {
        const uint64_t size = w.next_tensor_bytes();
        w.write_tensor(data ? data(i, size) : std::vector<std::byte>(size));
    }
    w.finish();
    const std::string s = out.str();
    std::vector<std::byte> bytes(s.size());
    std::memcpy(bytes.data(), s.data(), s.size());
    return bytes;
}

SyntheticGptOssOptions micro_options()
{
    SyntheticGptOssOptions o;
    o.n_layer = 1, o.n_embd = 32, o.n_head = 2, o.n_head_kv = 1, o.head_dim = 16;
    o.n_expert = 2, o.n_expert_used = 1, o.n_ff_exp = 32, o.n_vocab = 8, o.sliding_window = 4;
    return o;
}

std::vector<std::byte> gpt_oss_bytes(const SyntheticGptOssOptions& options, const GptOssEdits& e)
{
    const GptOssConfig c = synthetic_config(options);
    GgufWriter w;
    auto u32 = [&](const std::string& key, uint32_t v) {
        if (key == e.drop_key) return;
        if (key == e.string_key)
            w.set_string(key, "oops");
        else
            w.set_u32(key, v);
    };
    auto f32 = [&](const std::string& key, float v) {
        if (key == e.drop_key) return;
        if (key == e.string_key)
            w.set_string(key, "oops");
        else
            w.set_f32(key, v);
    };
    if (e.drop_key != "general.architecture") w.set_string("general.architecture", e.architecture);
    u32("gpt-oss.context_length", c.n_ctx_train);
    u32("gpt-oss.embedding_length", c.n_embd);
    u32("gpt-oss.block_count", c.n_layer);
    u32("gpt-oss.attention.head_count", c.n_head);
    u32("gpt-oss.attention.head_count_kv", c.n_head_kv);
    u32("gpt-oss.attention.key_length", c.head_dim);
    u32("gpt-oss.attention.value_length", c.head_dim_v);
    f32("gpt-oss.attention.layer_norm_rms_epsilon", c.rms_eps);
    u32("gpt-oss.attention.sliding_window", c.sliding_window);
    f32("gpt-oss.rope.freq_base", c.rope_freq_base);
    u32("gpt-oss.expert_count", c.n_expert);
    u32("gpt-oss.expert_used_count", c.n_expert_used);
    u32("gpt-oss.expert_feed_forward_length", c.n_ff_exp);
    if (e.drop_key != "tokenizer.ggml.model") w.set_string("tokenizer.ggml.model", "none");
    u32("gpt-oss.vocab_size", c.n_vocab);
    if (e.extra_keys) e.extra_keys(w);

    for (const TensorSpec& s : gpt_oss_tensor_specs(c)) {
        if (s.name == e.drop_tensor) continue;
        std::vector<uint64_t> ne = s.ne;
        TensorType type = s.ne.size() == 3 ? TensorType::MXFP4 : TensorType::F32;
        if (s.name == e.retype_tensor) type = TensorType::F16;
        if (s.name == e.reshape_tensor) ne[0] += 32;
        w.add_tensor(s.name, type, ne);
    }
    if (!e.extra_tensor.empty()) {
        const uint64_t ne[] = {32};
        w.add_tensor(e.extra_tensor, TensorType::F32, ne);
    }
    return write_to_bytes(w);
}

}  // namespace jal::model::test
