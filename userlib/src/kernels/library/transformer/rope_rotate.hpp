// The NEOX rotation of head halves already in L1 (rope.hpp): one instruction sequence shared
// by the rope kernel and the attention kernel that rotates its queries and keys itself
// (AttentionConfig::rope), so both give the same bits.
#pragma once

#include <jal/kernels/builder.hpp>

namespace jal::kernels::transformer_detail {

// x0, x1 (the two halves of heads) ← (x0 cos − x1 sin, x0 sin + x1 cos); ta, tb are scratch
// of their shape.
inline void emit_rope_pair(Builder& b, T x0, T x1, T cos, T sin, T ta, T tb)
{
    b.vmul(ta, x0, cos);
    b.vmul(tb, x1, sin);
    b.vsub(ta, ta, tb);  // x0 cos - x1 sin
    b.vmul(tb, x0, sin);
    b.vmul(x1, x1, cos);
    b.vadd(x1, tb, x1);  // x0 sin + x1 cos
    b.vcopy(x0, ta);
}

}  // namespace jal::kernels::transformer_detail
