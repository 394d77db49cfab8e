// transformer.hpp: the transformer half of the kernel library (docs/kernels.md): RMSNorm,
// softmax with sinks, RoPE/YaRN, GPT-OSS's SwiGLU, elementwise helpers, the KV cache and
// attention, MoE routing and combine. Each kernel has a generator (a configuration in,
// a CodeObject out) and a host call that runs it with TensorRefs.
#pragma once

#include <jal/kernels/library/attention.hpp>
#include <jal/kernels/library/elementwise.hpp>
#include <jal/kernels/library/kv_cache.hpp>
#include <jal/kernels/library/moe.hpp>
#include <jal/kernels/library/norm.hpp>
#include <jal/kernels/library/rope.hpp>
#include <jal/kernels/library/softmax.hpp>
#include <jal/kernels/library/swiglu.hpp>
