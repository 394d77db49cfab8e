// Top-k experts and their softmax weights for rows of router logits already in L1
// (moe.hpp's routing): one instruction sequence shared by the moe_routing kernel and the
// gate|up expert GEMM that routes its tokens itself, so both give the same bits.
#pragma once

#include <cstdint>

#include <jal/kernels/builder.hpp>

namespace jal::kernels::linear::detail {

// logits (F32, rows × E) in; ids (I32, rows × k): the k largest, descending (lowest index
// on ties); w (F32, rows × k): their softmax over the k selected logits only. m and s are
// F32 rows × 1 scratch.
inline void emit_topk_softmax(Builder& b, T logits, T ids, T w, T m, T s, uint32_t k)
{
    b.vtopk(ids, logits, k);
    b.vtopkv(w, logits, k);
    b.vredmax(m, w);
    b.vsub(w, w, m);
    b.vexp(w, w);
    b.vredsum(s, w);
    b.vrecip(s, s);
    b.vmul(w, w, s);
}

}  // namespace jal::kernels::linear::detail
