// GPT-OSS's clamped SwiGLU of rows already in L1 (swiglu.hpp): one instruction sequence
// shared by the swiglu_oai kernel and the down-projection expert GEMM that fuses it into
// its activation load, so both give the same bits.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>

#include <jal/kernels/builder.hpp>

namespace jal::kernels::linear::detail {

// The f32 bits of -inf, -limit and limit, for VCLAMP (registers the caller frees).
struct SwigluBounds {
    X minus_inf, minus_limit, limit;
};

inline SwigluBounds emit_swiglu_bounds(Builder& b, float limit)
{
    auto bits = [&](float v) {
        X r = b.x();
        b.li(r, static_cast<int64_t>(std::bit_cast<uint32_t>(v)));
        return r;
    };
    return {bits(-std::numeric_limits<float>::infinity()), bits(-limit), bits(limit)};
}

inline void free_swiglu_bounds(Builder& b, const SwigluBounds& r)
{
    b.free(r.limit);
    b.free(r.minus_limit);
    b.free(r.minus_inf);
}

// g = min(g, limit) · sigmoid(alpha · min(g, limit)) · (clamp(u, -limit, limit) + 1), in
// place in g; t is F32 scratch of g's shape, u is clamped and incremented in place.
inline void emit_swiglu_rows(Builder& b, T g, T u, T t, const SwigluBounds& r, float alpha)
{
    b.vclamp(g, g, r.minus_inf, r.limit);  // min(g, limit): the gate is clamped above only
    b.vclamp(u, u, r.minus_limit, r.limit);
    b.vscale(t, g, alpha);
    b.vsigmoid(t, t);
    b.vmul(g, g, t);
    b.vadds(u, u, 1.0f);
    b.vmul(g, g, u);
}

// g = silu(g) · u (ggml_swiglu), in place in g.
inline void emit_swiglu_plain_rows(Builder& b, T g, T u)
{
    b.vsilu(g, g);
    b.vmul(g, g, u);
}

}  // namespace jal::kernels::linear::detail
