// Tile-level instruction sequences shared by the linear generators (tiles.hpp).
#include "tiles.hpp"

#include "emit.hpp"

namespace jal::kernels::linear::detail {

void emit_tdesc_at(Builder& b, T t, uint32_t l1, X rows, X cols, jal_dtype dt,
                   uint32_t stride_bytes)
{
    X a = emit_const(b, l1);
    b.tdesc(t, a, rows, cols, dt, stride_bytes);
    b.free(a);
}

void emit_ceil_div(Builder& b, X d, X count, X unit_reg, uint32_t unit)
{
    b.addi(d, count, static_cast<int32_t>(unit - 1));
    b.divu(d, d, unit_reg);
}

Blocks emit_blocks(Builder& b, X count, uint32_t unit)
{
    Blocks r{emit_const(b, unit), b.x()};
    emit_ceil_div(b, r.count, count, r.unit, unit);
    return r;
}

Label emit_skip_if_empty(Builder& b, X count)
{
    Label done = b.label();
    b.beq(count, zero, done);
    return done;
}

X emit_block_size(Builder& b, X j, X count, X unit_reg)
{
    X r = b.x();
    b.mul(r, j, unit_reg);
    b.sub(r, count, r);
    b.min(r, r, unit_reg);
    return r;
}

X emit_block_addr(Builder& b, X j, X unit_reg, X stride, X base)
{
    X a = b.x();
    b.mul(a, j, unit_reg);
    b.mul(a, a, stride);
    b.add(a, a, base);
    return a;
}

X emit_block_elem_addr(Builder& b, X j, X unit_reg, int32_t element_bytes, X base)
{
    X a = b.x();
    b.mul(a, j, unit_reg);
    b.muli(a, a, element_bytes);
    b.add(a, a, base);
    return a;
}

CodeObject emit_finish(Builder& b, Label done)
{
    b.bind(done);
    b.end();
    return b.finish();
}

}  // namespace jal::kernels::linear::detail
