// jal_model.h over jal::model::Runtime: exceptions become statuses and a per-thread message.
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>

#include <jal/model/jal_model.h>
#include <jal/model/runtime.hpp>

struct jal_model_s {
    std::unique_ptr<jal::runtime::Device> device;
    std::unique_ptr<jal::model::Runtime> runtime;
};
struct jal_sampler_s {
    jal::model::Sampler sampler;
};

namespace {

thread_local std::string g_error;

template <typename F>
jal_status_t guard(F&& f)
{
    try {
        f();
        g_error.clear();
        return JAL_STATUS_OK;
    } catch (const jal::Error& e) {
        g_error = e.what();
        return e.status();
    } catch (const std::bad_alloc&) {
        g_error = "out of host memory";
        return JAL_STATUS_NO_MEMORY;
    } catch (const std::exception& e) {
        g_error = e.what();
        return JAL_STATUS_INTERNAL;
    }
}

void require(bool ok, const char* what)
{
    if (!ok) throw jal::Error(JAL_STATUS_INVALID_FIELD, what);
}

}  // namespace

extern "C" {

const char* jal_model_last_error(void)
{
    return g_error.c_str();
}

jal_status_t jal_model_open(const char* path, uint32_t device_index,
                            const jal_model_options_t* options, jal_model_t* out)
{
    return guard([&] {
        require(path && out, "jal_model_open: path and out are required");
        jal::model::RuntimeOptions o;
        std::string emu_dir;
        if (options) {
            require(options->struct_size >= sizeof(jal_model_options_t),
                    "jal_model_open: bad struct_size");
            o.numerics = options->numerics == JAL_MODEL_NUMERICS_GGML
                             ? jal::model::Numerics::ggml
                             : jal::model::Numerics::native;
            o.slices = options->slices;
            if (options->max_sequences) o.max_sequences = options->max_sequences;
            o.n_ctx = options->n_ctx;
            if (options->max_batch_tokens) o.max_batch_tokens = options->max_batch_tokens;
            o.timing_only = options->timing_only != 0;
            if (options->emu_dir) emu_dir = options->emu_dir;
        }
        auto m = std::make_unique<jal_model_s>();
        m->device = std::make_unique<jal::runtime::Device>(device_index, emu_dir);
        m->runtime = jal::model::Runtime::open(path, *m->device, o);
        *out = m.release();
    });
}

jal_status_t jal_model_close(jal_model_t model)
{
    return guard([&] {
        if (model) {
            model->runtime.reset();  // before the device it uses
            delete model;
        }
    });
}

jal_status_t jal_model_get_info(jal_model_t model, jal_model_info_t* info)
{
    return guard([&] {
        require(model && info && info->struct_size >= sizeof(jal_model_info_t),
                "jal_model_get_info: bad arguments");
        const auto& c = model->runtime->config();
        const auto& o = model->runtime->options();
        info->n_vocab = c.n_vocab, info->n_layer = c.n_layer, info->n_embd = c.n_embd;
        info->n_head = c.n_head, info->n_head_kv = c.n_head_kv, info->head_dim = c.head_dim;
        info->n_expert = c.n_expert, info->n_expert_used = c.n_expert_used;
        info->n_ctx = o.n_ctx, info->max_sequences = o.max_sequences,
        info->slices = model->runtime->slices();
        info->weight_bytes = model->runtime->weight_bytes();
    });
}

jal_status_t jal_model_sequence_create(jal_model_t model, int32_t* seq)
{
    return guard([&] {
        require(model && seq, "jal_model_sequence_create: bad arguments");
        *seq = model->runtime->create_sequence();
    });
}

jal_status_t jal_model_sequence_free(jal_model_t model, int32_t seq)
{
    return guard([&] {
        require(model, "jal_model_sequence_free: no model");
        model->runtime->free_sequence(seq);
    });
}

jal_status_t jal_model_prefill(jal_model_t model, int32_t seq, const int32_t* tokens, uint32_t n,
                               float* logits)
{
    return guard([&] {
        require(model && tokens && n, "jal_model_prefill: bad arguments");
        auto l = model->runtime->prefill(seq, {tokens, n});
        if (logits) std::memcpy(logits, l.data(), l.size() * sizeof(float));
    });
}

jal_status_t jal_model_step(jal_model_t model, const int32_t* seqs, const int32_t* tokens,
                            uint32_t n, float* logits)
{
    return guard([&] {
        require(model && seqs && tokens && n, "jal_model_step: bad arguments");
        std::vector<std::pair<int, int32_t>> batch;
        for (uint32_t i = 0; i < n; i++) batch.push_back({seqs[i], tokens[i]});
        auto rows = model->runtime->decode(batch);
        if (logits)
            for (size_t i = 0; i < rows.size(); i++)
                std::memcpy(logits + i * rows[i].size(), rows[i].data(),
                            rows[i].size() * sizeof(float));
    });
}

jal_status_t jal_model_prepare_step(jal_model_t model, const int32_t* seqs, uint32_t n)
{
    return guard([&] {
        require(model && seqs && n, "jal_model_prepare_step: bad arguments");
        model->runtime->prepare_decode(std::vector<int>(seqs, seqs + n));
    });
}

jal_status_t jal_model_decode_greedy(jal_model_t model, const int32_t* seqs, const int32_t* tokens,
                                     uint32_t n, uint32_t steps, int32_t* out_tokens)
{
    return guard([&] {
        require(model && seqs && tokens && n && (out_tokens || !steps),
                "jal_model_decode_greedy: bad arguments");
        std::vector<std::pair<int, int32_t>> batch;
        for (uint32_t i = 0; i < n; i++) batch.push_back({seqs[i], tokens[i]});
        const auto chosen = model->runtime->decode_greedy(batch, steps, {});
        for (size_t s = 0; s < chosen.size(); s++)
            std::copy(chosen[s].begin(), chosen[s].end(), out_tokens + s * n);
    });
}

jal_status_t jal_model_totals(jal_model_t model, int last, jal_model_totals_t* out)
{
    return guard([&] {
        require(model && out, "jal_model_totals: bad arguments");
        const jal::model::ChipTotals& t = last ? model->runtime->last() : model->runtime->total();
        *out = {t.dispatches, t.modelled_ns, t.energy_nj, t.flops, t.hbm_bytes};
    });
}

jal_status_t jal_sampler_create(float temperature, float top_p, uint64_t seed, jal_sampler_t* out)
{
    return guard([&] {
        require(out, "jal_sampler_create: out is required");
        *out = new jal_sampler_s{jal::model::Sampler({temperature, top_p, seed})};
    });
}

jal_status_t jal_sampler_destroy(jal_sampler_t sampler)
{
    delete sampler;
    return JAL_STATUS_OK;
}

jal_status_t jal_sampler_sample(jal_sampler_t sampler, const float* logits, uint32_t n_vocab,
                                int32_t* token)
{
    return guard([&] {
        require(sampler && logits && n_vocab && token, "jal_sampler_sample: bad arguments");
        *token = sampler->sampler.sample({logits, n_vocab});
    });
}

jal_status_t jal_model_top_logprobs(const float* logits, uint32_t n_vocab, uint32_t k, int32_t* ids,
                                    float* logprobs)
{
    return guard([&] {
        require(logits && n_vocab && ids && logprobs, "jal_model_top_logprobs: bad arguments");
        auto top = jal::model::top_logprobs({logits, n_vocab}, k);
        for (size_t i = 0; i < top.size(); i++) ids[i] = top[i].first, logprobs[i] = top[i].second;
    });
}

}  // extern "C"
