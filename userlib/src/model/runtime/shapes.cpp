// The published GPT-OSS shapes (openai/gpt-oss config.json; llama.cpp's gpt-oss loader),
// for timing-only projections without the weights.
#include <jal/model/runtime.hpp>

namespace jal::model {

namespace {
GptOssConfig gpt_oss_common()
{
    GptOssConfig c;
    c.n_ctx_train = 131072;
    c.n_embd = 2880;
    c.n_head = 64;
    c.n_head_kv = 8;
    c.head_dim = 64;
    c.head_dim_v = 64;
    c.n_rot = 64;
    c.n_ff_exp = 2880;
    c.n_vocab = 201088;
    c.sliding_window = 128;
    c.swa_period = 2;
    c.rms_eps = 1e-5f;
    c.rope_freq_base = 150000.0f;
    c.rope_freq_base_swa = 150000.0f;
    c.rope_scaling_type = "yarn";
    c.rope_scaling_factor = 32.0f;
    c.rope_orig_ctx = 4096;
    c.n_expert_used = 4;
    c.tokenizer_model = "gpt2";
    return c;
}
}  // namespace

GptOssConfig gpt_oss_120b_config()
{
    GptOssConfig c = gpt_oss_common();
    c.n_layer = 36;
    c.n_expert = 128;
    return c;
}

GptOssConfig gpt_oss_20b_config()
{
    GptOssConfig c = gpt_oss_common();
    c.n_layer = 24;
    c.n_expert = 32;
    return c;
}

}  // namespace jal::model
