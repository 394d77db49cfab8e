/* jal_model.h: the GPT-OSS model runtime for a serving runtime, in C (docs/model-runtime.md).
 *
 *   jal_model_t m;
 *   jal_model_options_t o = {.struct_size = sizeof o, .numerics = JAL_MODEL_NUMERICS_NATIVE};
 *   jal_model_open("m.gguf", 0, &o, &m);
 *   int32_t seq;
 *   jal_model_sequence_create(m, &seq);
 *   jal_model_prefill(m, seq, prompt, n_prompt, logits);      // logits: n_vocab floats
 *   jal_sampler_sample(sampler, logits, n_vocab, &tok);
 *   jal_model_step(m, &seq, &tok, 1, logits);                  // one step of n sequences
 *   jal_model_sequence_free(m, seq);
 *   jal_model_close(m);
 *
 * Every call returns a jal_status_t; on failure jal_model_last_error() (per thread) says
 * why. A model handle is used by one thread at a time. */
#ifndef JAL_MODEL_H
#define JAL_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include <jal/jal.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct jal_model_s* jal_model_t;
typedef struct jal_sampler_s* jal_sampler_t;

enum jal_model_numerics {
    JAL_MODEL_NUMERICS_NATIVE = 0, /* F32 activations, MXFP4 decoded exactly */
    JAL_MODEL_NUMERICS_GGML = 1,   /* llama.cpp's CPU roundings (Q8_0 activations) */
};

typedef struct jal_model_options {
    uint32_t struct_size;      /* sizeof(jal_model_options_t) */
    uint32_t numerics;         /* enum jal_model_numerics */
    uint32_t slices;           /* dispatch slices; 0: the default */
    uint32_t max_sequences;    /* KV cache slots; 0: 4 */
    uint32_t n_ctx;            /* positions per slot; 0: min(context length, 4096) */
    uint32_t max_batch_tokens; /* rows per graph run; 0: 256 */
    uint32_t timing_only;      /* non-zero: no data written, logits are zeros */
    uint32_t reserved;
    const char* emu_dir; /* jal-emu socket directory; NULL: the default */
} jal_model_options_t;

typedef struct jal_model_info {
    uint32_t struct_size;
    uint32_t n_vocab, n_layer, n_embd, n_head, n_head_kv, head_dim, n_expert, n_expert_used;
    uint32_t n_ctx, max_sequences, slices;
    uint64_t weight_bytes;
} jal_model_info_t;

/* What the chip did (dispatch reports): modelled time and dynamic energy. */
typedef struct jal_model_totals {
    uint64_t dispatches, modelled_ns, energy_nj, flops, hbm_bytes;
} jal_model_totals_t;

JAL_API const char* jal_model_last_error(void);

/* Opens device `device_index`, loads the GGUF (path) and uploads it. options may be NULL. */
JAL_API jal_status_t jal_model_open(const char* path, uint32_t device_index,
                                    const jal_model_options_t* options, jal_model_t* out);
JAL_API jal_status_t jal_model_close(jal_model_t model);
JAL_API jal_status_t jal_model_get_info(jal_model_t model, jal_model_info_t* info);

/* A sequence (KV cache slot); BUSY when every slot is in use. */
JAL_API jal_status_t jal_model_sequence_create(jal_model_t model, int32_t* seq);
JAL_API jal_status_t jal_model_sequence_free(jal_model_t model, int32_t seq);

/* The prompt as one batch; the last token's logits into `logits` (n_vocab floats; may be
 * NULL). */
JAL_API jal_status_t jal_model_prefill(jal_model_t model, int32_t seq, const int32_t* tokens,
                                       uint32_t n, float* logits);
/* One decode step of n sequences together (continuous batching): seqs[i] takes tokens[i];
 * logits row i (n × n_vocab floats; may be NULL) is its next-token logits. */
JAL_API jal_status_t jal_model_step(jal_model_t model, const int32_t* seqs, const int32_t* tokens,
                                    uint32_t n, float* logits);
/* Builds the programs of a step of these n sequences at their current lengths without
 * running it, so that their next jal_model_step finds them built (C++: prepare_decode). */
JAL_API jal_status_t jal_model_prepare_step(jal_model_t model, const int32_t* seqs, uint32_t n);
/* `steps` greedy decode steps of n sequences, seqs[i] starting from tokens[i], each step's
 * tokens chosen by an argmax on the chip and fed to the next there (C++: decode_greedy):
 * out_tokens (steps × n, row-major by step) receives them. */
JAL_API jal_status_t jal_model_decode_greedy(jal_model_t model, const int32_t* seqs,
                                             const int32_t* tokens, uint32_t n, uint32_t steps,
                                             int32_t* out_tokens);
/* Chip figures of the last prefill/step (last != 0) or since open. */
JAL_API jal_status_t jal_model_totals(jal_model_t model, int last, jal_model_totals_t* out);

/* Sampling: temperature 0 is greedy (argmax, lowest id on a tie); else softmax at the
 * temperature restricted to the top-p nucleus, drawn from a generator seeded with `seed`. */
JAL_API jal_status_t jal_sampler_create(float temperature, float top_p, uint64_t seed,
                                        jal_sampler_t* out);
JAL_API jal_status_t jal_sampler_destroy(jal_sampler_t sampler);
JAL_API jal_status_t jal_sampler_sample(jal_sampler_t sampler, const float* logits,
                                        uint32_t n_vocab, int32_t* token);
/* The k most likely ids and their log-probabilities (log-softmax of the logits). */
JAL_API jal_status_t jal_model_top_logprobs(const float* logits, uint32_t n_vocab, uint32_t k,
                                            int32_t* ids, float* logprobs);

#ifdef __cplusplus
}
#endif

#endif /* JAL_MODEL_H */
