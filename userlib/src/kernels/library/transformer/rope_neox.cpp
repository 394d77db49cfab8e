// rope_neox.cpp: the NEOX rotation on the chip, cos/sin gathered from host-made tables by
// each token's position (rope.hpp).
#include <jal/kernels/library/rope.hpp>

#include "row_blocks.hpp"
#include "tensor_checks.hpp"

namespace jal::kernels {

using namespace transformer_detail;

uint32_t RopeConfig::rows_per_block() const
{
    // x, plus cos, sin and two temporaries of half a head each, plus the index.
    const uint64_t per_row = 4ull * n_head * head_dim + 4ull * 4 * (head_dim / 2) + 4;
    return block_rows ? block_rows : rows_that_fit(per_row, kL1Budget, 64);
}

CodeObject build_rope_neox(const RopeConfig& cfg)
{
    const std::string name =
        "rope_neox_h" + std::to_string(cfg.n_head) + "_d" + std::to_string(cfg.head_dim);
    require(cfg.n_head > 0 && cfg.head_dim > 0 && cfg.head_dim % 2 == 0, name,
            "n_head must be positive and head_dim even");
    const uint32_t R = cfg.rows_per_block();
    const uint32_t half = cfg.head_dim / 2;
    const uint32_t row_bytes = cfg.n_head * cfg.head_dim * 4;
    Builder b(name);

    X x = b.arg("x", JAL_ARG_ADDRESS);
    X x_stride = b.arg("x_stride");
    X rows = b.arg("rows");
    X positions = b.arg("positions", JAL_ARG_ADDRESS);
    X pos_start = b.arg("pos_start");
    X cos = b.arg("cos", JAL_ARG_ADDRESS);
    X sin = b.arg("sin", JAL_ARG_ADDRESS);

    X l1_x = constant(b, b.l1_alloc(R * row_bytes));
    X l1_i = constant(b, b.l1_alloc(R * 4));
    X l1_c = constant(b, b.l1_alloc(R * half * 4));
    X l1_s = constant(b, b.l1_alloc(R * half * 4));
    X l1_a = constant(b, b.l1_alloc(R * half * 4));
    X l1_b = constant(b, b.l1_alloc(R * half * 4));
    X one = constant(b, 1);
    X halfr = constant(b, half);
    X table_row = constant(b, half * 4);
    X cols = constant(b, cfg.n_head * cfg.head_dim);
    X n_head = constant(b, cfg.n_head);

    T tidx_row = b.t(), tidx = b.t(), tc = b.t(), ts = b.t(), tx = b.t();
    T x0 = b.t(), x1 = b.t(), ta = b.t(), tb = b.t();
    Q q = b.q();

    RowRange range = slice_rows(b, rows);
    for_blocks(b, range.begin, range.end, R, [&](X row0, X n) {
        X addr = b.x();
        // The block's positions as one I32 row (loaded, or counted up from pos_start),
        // then viewed as the column of indices TGATHER takes: the same bytes.
        b.tdesc(tidx_row, l1_i, one, n, JAL_DT_I32);
        Label counted = b.label(), have_positions = b.label();
        b.beq(positions, zero, counted);
        b.muli(addr, row0, 4);
        b.add(addr, addr, positions);
        b.tload(tidx_row, addr, zero, q);
        b.wait(q);
        b.jmp(have_positions);
        b.bind(counted);
        b.add(addr, pos_start, row0);
        b.viota(tidx_row, addr, one);
        b.bind(have_positions);
        b.tdesc(tidx, l1_i, n, one, JAL_DT_I32);

        b.tdesc(tc, l1_c, n, halfr, JAL_DT_F32);
        b.tdesc(ts, l1_s, n, halfr, JAL_DT_F32);
        b.tgather(tc, cos, table_row, tidx, q);
        b.tgather(ts, sin, table_row, tidx, q);
        b.tdesc(tx, l1_x, n, cols, JAL_DT_F32);
        b.mul(addr, row0, x_stride);
        b.add(addr, addr, x);
        b.tload(tx, addr, x_stride, q);
        b.wait(q, 3);

        b.tdesc(ta, l1_a, n, halfr, JAL_DT_F32);
        b.tdesc(tb, l1_b, n, halfr, JAL_DT_F32);
        b.for_range(zero, n_head, 1, [&](X h) {
            // The two halves of head h in every token of the block: strided views of x.
            X a0 = b.x();
            X a1 = b.x();
            b.muli(a0, h, static_cast<int32_t>(cfg.head_dim * 4));
            b.add(a0, a0, l1_x);
            b.addi(a1, a0, static_cast<int32_t>(half * 4));
            b.tdesc(x0, a0, n, halfr, JAL_DT_F32, row_bytes);
            b.tdesc(x1, a1, n, halfr, JAL_DT_F32, row_bytes);
            b.vmul(ta, x0, tc);
            b.vmul(tb, x1, ts);
            b.vsub(ta, ta, tb);  // x0 cos - x1 sin
            b.vmul(tb, x0, ts);
            b.vmul(x1, x1, tc);
            b.vadd(x1, tb, x1);  // x0 sin + x1 cos
            b.vcopy(x0, ta);
            b.free(a1);
            b.free(a0);
        });

        store_rows(b, tx, addr, row0, x, x_stride, q);
        b.free(addr);
    });
    b.end();
    return b.finish();
}

std::vector<uint64_t> rope_neox_args(const RopeConfig& cfg, const TensorRef& x,
                                     const TensorRef& positions, uint32_t pos_start,
                                     const RopeTablesRef& tables)
{
    const std::string k = "rope_neox";
    check_tensor(x, JAL_DT_F32, cfg.n_head * cfg.head_dim, 0, k, "x");
    require(tables.cos_va && tables.sin_va, k, "the cos and sin tables need device addresses");
    if (positions.va) {
        check_tensor(positions, JAL_DT_I32, 0, 0, k, "positions");
        require(uint64_t{positions.rows} * positions.cols >= x.rows &&
                    (positions.rows == 1 || stride_of(positions) == uint64_t{positions.cols} * 4),
                k, "positions must be packed I32, one per row of x");
    } else {
        require(uint64_t{pos_start} + x.rows <= tables.n_positions, k,
                "positions pos_start.. run past the tables");
    }
    return {x.va, stride_of(x), x.rows, positions.va, pos_start, tables.cos_va, tables.sin_va};
}

jal_dispatch_report rope_neox(Launcher& launcher, const Program& program, const RopeConfig& config,
                              const TensorRef& x, const TensorRef& positions, uint32_t pos_start,
                              const RopeTablesRef& tables, const DispatchOptions& options)
{
    return launcher.run(program, args_of(rope_neox_args(config, x, positions, pos_start, tables)),
                        options);
}

}  // namespace jal::kernels
