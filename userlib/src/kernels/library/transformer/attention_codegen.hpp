// attention_codegen.hpp: the flash-attention code generator behind build_attention
// (attention.cpp checks the configuration and names the kernel; the method is described
// there).
#pragma once

#include <string>

#include <jal/kernels/library/attention.hpp>

namespace jal::kernels::transformer_detail {

// The attention kernel for a configuration build_attention has already checked.
CodeObject emit_attention(const AttentionConfig& cfg, const std::string& name);

}  // namespace jal::kernels::transformer_detail
