// kv_append.cpp: write new keys and values into each KV head's cache (attention.hpp has
// the layout). V is stored transposed; the transpose is a matrix-engine product with the
// identity (exact: every other term is a zero product).
#include <jal/kernels/library/attention.hpp>

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
    const std::string name =
        "kv_append_g" + std::to_string(cfg.n_head_kv) + "_d" + std::to_string(cfg.head_dim);
    require(cfg.n_head_kv > 0 && cfg.head_dim > 0 && cfg.n_ctx > 0, name,
            "n_head_kv, head_dim and n_ctx must be positive");
    const uint32_t R = cfg.rows_per_block();
    const uint32_t D = cfg.head_dim;
    Builder b(name);

    X k = b.arg("k", JAL_ARG_ADDRESS);
    X k_stride = b.arg("k_stride");
    X v = b.arg("v", JAL_ARG_ADDRESS);
    X v_stride = b.arg("v_stride");
    X rows = b.arg("rows");
    X pos0 = b.arg("pos0");
    X heads = b.arg("heads", JAL_ARG_ADDRESS);
    trap_unless_within(b, pos0, rows, cfg.n_ctx);

    const uint32_t l1_id = b.l1_alloc(D * D * 4);
    const uint32_t l1_k = b.l1_alloc(R * D * 4);
    const uint32_t l1_v = b.l1_alloc(R * D * 4);
    const uint32_t l1_vt = b.l1_alloc(D * R * 4);
    X dim = constant(b, D);
    X key_bytes = constant(b, D * 4);
    X ctx_bytes = constant(b, cfg.n_ctx * 4ull);
    X l1 = b.x();
    T tid = b.t(), tk = b.t(), tv = b.t(), tvt = b.t();
    Q q = b.q();

    // The identity: zeros, then the diagonal as a column whose rows are D+1 elements apart.
    {
        X one = constant(b, 1);
        b.li(l1, l1_id);
        b.tdesc(tid, l1, dim, dim, JAL_DT_F32);
        b.vfill(tid, 0.0f);
        b.tdesc(tk, l1, dim, one, JAL_DT_F32, (D + 1) * 4);
        b.vfill(tk, 1.0f);
        b.free(one);
    }

    X g = b.slice_index();
    X ns = b.slice_count();
    X n_heads = constant(b, cfg.n_head_kv);
    for_strided(b, g, n_heads, ns, [&](X head) {
        X kc = b.x(), vc = b.x(), col = b.x();
        b.muli(kc, head, 16);
        b.add(kc, kc, heads);
        b.ld(vc, kc, 8);
        b.ld(kc, kc, 0);
        b.muli(col, head, static_cast<int32_t>(D * 4));  // the head's columns in k and v
        for_blocks(b, zero, rows, R, [&](X row0, X n) {
            X addr = b.x(), pos = b.x();
            b.li(l1, l1_k);
            b.tdesc(tk, l1, n, dim, JAL_DT_F32);
            b.mul(addr, row0, k_stride);
            b.add(addr, addr, k);
            b.add(addr, addr, col);
            b.tload(tk, addr, k_stride, q);
            b.li(l1, l1_v);
            b.tdesc(tv, l1, n, dim, JAL_DT_F32);
            b.mul(addr, row0, v_stride);
            b.add(addr, addr, v);
            b.add(addr, addr, col);
            b.tload(tv, addr, v_stride, q);
            b.wait(q, 2);

            b.add(pos, pos0, row0);
            b.muli(addr, pos, static_cast<int32_t>(D * 4));
            b.add(addr, addr, kc);
            b.tstore(tk, addr, key_bytes, q);

            // V^T (D x n) = I (D x D) x V^T: V (n rows of D) is the weight-layout operand.
            b.li(l1, l1_vt);
            b.tdesc(tvt, l1, dim, n, JAL_DT_F32);
            b.vfill(tvt, 0.0f);
            b.mma(tvt, tid, tv);
            b.muli(addr, pos, 4);
            b.add(addr, addr, vc);
            b.tstore(tvt, addr, ctx_bytes, q);
            b.wait(q, 2);
            b.free(pos);
            b.free(addr);
        });
        b.free(col);
        b.free(vc);
        b.free(kc);
    });
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
