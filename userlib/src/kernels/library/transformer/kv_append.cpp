// kv_append.cpp: write new keys and values into each KV head's cache (attention.hpp has
// the layout). V is stored transposed; the transpose is a matrix-engine product with the
// identity (exact: every other term is a zero product).
#include <jal/kernels/library/attention.hpp>

#include "kv_append_emit.hpp"
#include "row_blocks.hpp"
#include "tensor_checks.hpp"

namespace jal::kernels {

using namespace transformer_detail;

uint32_t KvAppendConfig::rows_per_block() const
{
    return block_rows ? block_rows : 128;
}

CodeObject build_kv_append(const KvAppendConfig& cfg)
{
    const std::string name = "kv_append_g" + std::to_string(cfg.n_head_kv) + "_d" +
                             std::to_string(cfg.head_dim) +
                             (cfg.kv_dtype == JAL_DT_F16 ? "_f16" : "");
    require(cfg.n_head_kv > 0 && cfg.head_dim > 0 && cfg.n_ctx > 0, name,
            "n_head_kv, head_dim and n_ctx must be positive");
    require(cfg.kv_dtype == JAL_DT_F32 || cfg.kv_dtype == JAL_DT_F16, name,
            "the cache's elements are F32 or F16");
    const uint32_t e = cfg.kv_dtype == JAL_DT_F16 ? 2 : 4;
    const uint32_t R = cfg.rows_per_block();
    const uint32_t D = cfg.head_dim;
    Builder b(name);

    KvAppendRegs r{};
    r.head_dim = D;
    r.kv_dtype = cfg.kv_dtype;
    r.k = b.arg("k", JAL_ARG_ADDRESS);
    r.k_stride = b.arg("k_stride");
    r.v = b.arg("v", JAL_ARG_ADDRESS);
    r.v_stride = b.arg("v_stride");
    X rows = b.arg("rows");
    r.pos0 = b.arg("pos0");
    X heads = b.arg("heads", JAL_ARG_ADDRESS);
    trap_unless_within(b, r.pos0, rows, cfg.n_ctx);

    const uint32_t l1_id = b.l1_alloc(D * D * 4);
    r.l1_k = b.l1_alloc(R * D * 4);
    r.l1_v = b.l1_alloc(R * D * 4);
    r.l1_vt = b.l1_alloc(D * R * 4);
    r.dim = constant(b, D);
    r.key_bytes = constant(b, D * e);
    r.ctx_bytes = constant(b, uint64_t{cfg.n_ctx} * e);
    r.l1 = b.x();
    r.tid = b.t(), r.tk = b.t(), r.tv = b.t(), r.tvt = b.t();
    r.q = b.q();
    r.qst = b.q();
    emit_identity(b, r, l1_id);

    X g = b.slice_index();
    X ns = b.slice_count();
    X n_heads = constant(b, cfg.n_head_kv);
    // Rows [first, last) of head `head` into its cache.
    auto append_rows = [&](X head, X first, X last) {
        X entry = b.x(), col = b.x();
        b.muli(entry, head, 16);
        b.add(entry, entry, heads);
        b.muli(col, head, static_cast<int32_t>(D * 4));  // the head's columns in k and v
        for_blocks(b, first, last, R,
                   [&](X row0, X n) { append_block(b, r, entry, col, row0, n); });
        b.free(col);
        b.free(entry);
    };
    Label few = b.label(), done = b.label();
    b.blt(ns, n_heads, few);
    {
        // At least as many slices as heads (a prompt on the whole chip): ⌊n/G⌋ slices a
        // head, each appending a share of the rows, instead of G slices appending all of
        // them while the rest wait.
        X parts = b.x(), part = b.x(), first = b.x(), last = b.x();
        b.divu(parts, ns, n_heads);
        b.divu(part, g, n_heads);
        b.bge(part, parts, done);  // past the last whole round of heads
        b.remu(g, g, n_heads);
        b.add(last, rows, parts);  // share ⌈rows/parts⌉, as slice_range splits
        b.addi(last, last, -1);
        b.divu(last, last, parts);
        b.mul(first, part, last);
        b.min(first, first, rows);
        b.add(last, first, last);
        b.min(last, last, rows);
        append_rows(g, first, last);
        for (X x : {last, first, part, parts}) b.free(x);
        b.jmp(done);
    }
    b.bind(few);
    for_strided(b, g, n_heads, ns, [&](X head) { append_rows(head, zero, rows); });
    b.bind(done);
    b.end();
    return b.finish();
}

std::vector<uint64_t> kv_append_args(const KvAppendConfig& cfg, const TensorRef& k,
                                     const TensorRef& v, uint32_t pos0, uint64_t heads_va)
{
    const std::string kn = "kv_append";
    check_tensor(k, JAL_DT_F32, cfg.n_head_kv * cfg.head_dim, 0, kn, "k");
    check_tensor(v, JAL_DT_F32, cfg.n_head_kv * cfg.head_dim, k.rows, kn, "v");
    require(heads_va != 0, kn, "no head table");
    require(uint64_t{pos0} + k.rows <= cfg.n_ctx, kn, "positions run past the cache");
    return {k.va, stride_of(k), v.va, stride_of(v), k.rows, pos0, heads_va};
}

jal_dispatch_report kv_append(Launcher& launcher, const Program& program,
                              const KvAppendConfig& config, const TensorRef& k, const TensorRef& v,
                              uint32_t pos0, uint64_t heads_va, const DispatchOptions& options)
{
    return launcher.run(program, args_of(kv_append_args(config, k, v, pos0, heads_va)), options);
}

}  // namespace jal::kernels
