// rope_neox.cpp: the NEOX rotation on the chip, cos/sin gathered from host-made tables by
// each token's position (rope.hpp).
#include <jal/kernels/library/rope.hpp>

#include <algorithm>

#include "rope_rotate.hpp"
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

namespace {

// What the block loop of the rope kernel works with.
struct RopeBlock {
    X positions, pos_start, cos, sin, x, x_stride;
    X l1_x, l1_i, l1_c, l1_s, l1_a, l1_b, one, halfr, table_row, cols, n_head;
    T tidx_row, tidx, tc, ts, tx, x0, x1, ta, tb;
    Q q;
    uint32_t head_dim, half, row_bytes;
};

// The block's positions as one I32 row (loaded, or counted up from pos_start), then
// viewed as the column of indices TGATHER takes: the same bytes.
void block_positions(Builder& b, const RopeBlock& k, X row0, X n, X addr)
{
    b.tdesc(k.tidx_row, k.l1_i, k.one, n, JAL_DT_I32);
    Label counted = b.label(), have_positions = b.label();
    b.beq(k.positions, zero, counted);
    b.muli(addr, row0, 4);
    b.add(addr, addr, k.positions);
    b.tload(k.tidx_row, addr, zero, k.q);
    b.wait(k.q);
    b.jmp(have_positions);
    b.bind(counted);
    b.add(addr, k.pos_start, row0);
    b.viota(k.tidx_row, addr, k.one);
    b.bind(have_positions);
    b.tdesc(k.tidx, k.l1_i, n, k.one, JAL_DT_I32);
}

// cos and sin of the block's positions, and its rows of x; waits for all three.
void load_block(Builder& b, const RopeBlock& k, X row0, X n, X addr)
{
    b.tdesc(k.tc, k.l1_c, n, k.halfr, JAL_DT_F32);
    b.tdesc(k.ts, k.l1_s, n, k.halfr, JAL_DT_F32);
    b.tgather(k.tc, k.cos, k.table_row, k.tidx, k.q);
    b.tgather(k.ts, k.sin, k.table_row, k.tidx, k.q);
    b.tdesc(k.tx, k.l1_x, n, k.cols, JAL_DT_F32);
    row_address(b, addr, row0, k.x, k.x_stride);
    b.tload(k.tx, addr, k.x_stride, k.q);
    b.wait(k.q, 3);
}

// Rotates every head of the block's n tokens in place in L1.
void rotate_heads(Builder& b, const RopeBlock& k, X n)
{
    b.tdesc(k.ta, k.l1_a, n, k.halfr, JAL_DT_F32);
    b.tdesc(k.tb, k.l1_b, n, k.halfr, JAL_DT_F32);
    b.for_range(zero, k.n_head, 1, [&](X h) {
        // The two halves of head h in every token of the block: strided views of x.
        X a0 = b.x();
        X a1 = b.x();
        b.muli(a0, h, static_cast<int32_t>(k.head_dim * 4));
        b.add(a0, a0, k.l1_x);
        b.addi(a1, a0, static_cast<int32_t>(k.half * 4));
        b.tdesc(k.x0, a0, n, k.halfr, JAL_DT_F32, k.row_bytes);
        b.tdesc(k.x1, a1, n, k.halfr, JAL_DT_F32, k.row_bytes);
        emit_rope_pair(b, k.x0, k.x1, k.tc, k.ts, k.ta, k.tb);
        b.free(a1);
        b.free(a0);
    });
}

// The same rotation token by token: the heads of token t are the rows of a strided view
// (head_dim apart), rotated by row t of cos and sin broadcast down them. For fewer tokens
// than heads (a decode step's single row) this is 7 vector instructions per token instead of
// 7 per head; every element sees the same operations.
void rotate_tokens(Builder& b, const RopeBlock& k, X n)
{
    b.for_range(zero, n, 1, [&](X t) {
        X a0 = b.x(), a1 = b.x(), c = b.x();
        b.muli(a0, t, static_cast<int32_t>(k.row_bytes));
        b.add(a0, a0, k.l1_x);
        b.addi(a1, a0, static_cast<int32_t>(k.half * 4));
        b.tdesc(k.x0, a0, k.n_head, k.halfr, JAL_DT_F32, k.head_dim * 4);
        b.tdesc(k.x1, a1, k.n_head, k.halfr, JAL_DT_F32, k.head_dim * 4);
        b.muli(c, t, static_cast<int32_t>(k.half * 4));
        b.add(a0, c, k.l1_c);
        b.tdesc(k.tc, a0, k.one, k.halfr, JAL_DT_F32);
        b.add(a1, c, k.l1_s);
        b.tdesc(k.ts, a1, k.one, k.halfr, JAL_DT_F32);
        b.tdesc(k.ta, k.l1_a, k.n_head, k.halfr, JAL_DT_F32);
        b.tdesc(k.tb, k.l1_b, k.n_head, k.halfr, JAL_DT_F32);
        emit_rope_pair(b, k.x0, k.x1, k.tc, k.ts, k.ta, k.tb);
        b.free(c);
        b.free(a1);
        b.free(a0);
    });
}

}  // namespace

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

    RopeBlock k{};
    k.head_dim = cfg.head_dim, k.half = half, k.row_bytes = row_bytes;
    k.x = b.arg("x", JAL_ARG_ADDRESS);
    k.x_stride = b.arg("x_stride");
    X rows = b.arg("rows");
    k.positions = b.arg("positions", JAL_ARG_ADDRESS);
    k.pos_start = b.arg("pos_start");
    k.cos = b.arg("cos", JAL_ARG_ADDRESS);
    k.sin = b.arg("sin", JAL_ARG_ADDRESS);
    b.acquire();  // the arguments load while a staged program's previous stage finishes

    k.l1_x = constant(b, b.l1_alloc(R * row_bytes));
    k.l1_i = constant(b, b.l1_alloc(R * 4));
    k.l1_c = constant(b, b.l1_alloc(R * half * 4));
    k.l1_s = constant(b, b.l1_alloc(R * half * 4));
    // Temporaries of half a head per row: R rows, or one per head when rotating by tokens.
    const uint32_t temp_rows = std::max(R, cfg.n_head);
    k.l1_a = constant(b, b.l1_alloc(temp_rows * half * 4));
    k.l1_b = constant(b, b.l1_alloc(temp_rows * half * 4));
    k.one = constant(b, 1);
    k.halfr = constant(b, half);
    k.table_row = constant(b, half * 4);
    k.cols = constant(b, cfg.n_head * cfg.head_dim);
    k.n_head = constant(b, cfg.n_head);

    k.tidx_row = b.t(), k.tidx = b.t(), k.tc = b.t(), k.ts = b.t(), k.tx = b.t();
    k.x0 = b.t(), k.x1 = b.t(), k.ta = b.t(), k.tb = b.t();
    k.q = b.q();

    for_slice_blocks(b, rows, R, [&](X row0, X n) {
        X addr = b.x();
        block_positions(b, k, row0, n, addr);
        load_block(b, k, row0, n, addr);
        Label by_heads = b.label(), rotated = b.label();
        b.bge(n, k.n_head, by_heads);
        rotate_tokens(b, k, n);
        b.jmp(rotated);
        b.bind(by_heads);
        rotate_heads(b, k, n);
        b.bind(rotated);
        store_rows(b, k.tx, addr, row0, k.x, k.x_stride, k.q);
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
