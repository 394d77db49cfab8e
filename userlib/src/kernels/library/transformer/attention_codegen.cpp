// attention_codegen.cpp: the flash-attention generator (attention_codegen.hpp), one method
// a step of an item: where it is, its queries, the running state, the key chunks, the
// merge of key splits and the output.
#include "attention_codegen.hpp"

#include <cfloat>
#include <utility>

#include <jal/isa/numerics.hpp>

#include "../linear/emit.hpp"
#include "kv_append_emit.hpp"
#include "row_blocks.hpp"

namespace jal::kernels::transformer_detail {

namespace {

class AttentionKernel {
public:
    AttentionKernel(const AttentionConfig& cfg, const std::string& name);
    CodeObject build();

private:
    void declare();
    void layout_l1();
    void take_registers();
    void release();
    void sequence(bool append);
    void entries();
    bool appends_first() const { return cfg_.batch && cfg_.append_kv && !cfg_.rope; }
    // A decode row (a batch's entry, or a call of one row) with append_kv and rope: its
    // rows' loads, then its first item's queries and (when it holds no appended key) first
    // key chunk, then the rows rotated and stored, so that every load of the item is in
    // flight at once (with key splits, on the slices whose split holds the row). Other
    // calls append first (append_kv, append_kv_split).
    bool overlap_append() const { return cfg_.append_kv && cfg_.rope && G <= kAppendRows; }
    void unless_prefetched(X item, Label other);
    // A decode row's sliding window, once full, is one chunk that ends with the appended
    // key: its other keys load with the queries (load_window_but_last) and the appended key
    // and value are copied in from the append blocks (fill_window_last).
    bool partial_window() const { return cfg_.window >= 2 && cfg_.window <= Nk && S == 1; }
    void load_window_but_last(X kstart);
    void fill_window_last();
    void append_issue();
    void append_kv_split_rows();
    void append_finish_rows();
    void prefetch_first_item();
    void append_finish();
    KvAppendRope append_rope();
    void release_append_rope(const KvAppendRope& rope);
    void first_chunk_unless_prefetched(X item, X kstart);
    void append_entries();
    void trap_unless_multiple(X value, X of)
    {
        linear::detail::emit_trap_unless_multiple(b, value, of);
    }
    KvAppendRegs append_regs(bool identity = true);
    void release_append_regs(const KvAppendRegs& a);
    static constexpr uint32_t kAppendRows = 32;  // rows an append block holds
    void append_head(X head, KvAppendRegs& a);
    void store_entry_row(KvAppendRegs& a, X head, X e, X i, X heads_off);
    void append_kv();
    void append_kv_split();
    void first_key(X kstart, X first);
    void split_share(X per, X kstart, X end, X scratch);
    void with_spare_arguments(const std::function<void()>& body);
    void for_appended_heads(const std::function<void(X head)>& body);
    X first_chunk_end(X kstart);
    // A split's share of an item's L keys is ceil((L + Nk/2) / S): the last split's is half
    // a chunk shorter than the others' (or empty), since with append_kv the split holding
    // the newest keys appends them first, and split 0 waits for the slowest to merge.
    // (Measured on GPT-OSS-120B, C = 1: TPOT at 1k 0.950 / 0.945 / 0.947 ms with no, half
    // a and a whole chunk less; at 8k 0.9529 / 0.9529 / 0.9532.)
    int32_t split_share_rounding() const { return static_cast<int32_t>(Nk / 2 + S - 1); }
    void rotate_queries();
    int query_transfers() const;
    KvAppendRope rope_scratch();
    X count_items(X n_slices);
    void item(X item);
    void locate(X item);
    void move_heads(uint32_t l1_off, X base, X stride, bool store, Q q, jal_dtype dt = JAL_DT_F32,
                    uint32_t row_bytes = 0);
    void issue_queries();
    void store_converted();
    void start_state(X item);
    X key_start(X item);
    void keys(X k0);           // k0 starts at the first key and is changed
    void keys_two_deep(X k0);  // likewise; chunk k0's loads were issued (first_chunk)
    void first_chunk(X k0);
    void accumulate_pv(X k0, int buf);
    void clear_scores(int buf);
    X chunk_keys(X k0);
    void load_kv(X k0, int buf);
    void scores(X k0, int buf);
    void update(X k0, int buf);
    void mask_if_needed(X k0, X nk, int buf);
    void merge_splits(X item, Label item_done);
    void split_index(X sp, X item);
    void desc(T t, uint32_t l1_off, X nrows, X ncols, jal_dtype dt = JAL_DT_F32);
    void desc_head(T t, uint32_t l1_off, X hh, X n, X ncols, X row_bytes,
                   jal_dtype dt = JAL_DT_F32);

    const AttentionConfig& cfg_;
    const uint32_t G, r, D, Bq, Nk, M, S;
    const uint32_t orow;  // bytes of one head's row of the output (D·4 when F32)
    const jal_dtype kvt;  // the cache's elements (F32 or F16)
    const uint32_t kve;   // their bytes
    uint32_t l1_ob = 0;   // the converted output (when not F32)
    Builder b;

    // arguments
    X q{}, q_stride{}, out{}, out_stride{}, rows{}, pos0{}, heads{}, sinks{}, k_rows{}, v_rows{};
    X list{};  // a batch: the entry being run (rows, pos0, heads, q, out, k and v are its)
    X unit{};  // 1, while append_entries runs
    // L1 layout; the partner split's state (m2, l2, o2) only with key splits
    // Key chunks go through kBufs buffers of K, Vᵀ and scores, so chunk c+1's loads and its
    // Q·Kᵀ run while chunk c's softmax does (keys()).
    static constexpr int kBufs = 3;
    uint32_t l1_k[kBufs] = {}, l1_v[kBufs] = {}, l1_s[kBufs] = {};
    uint32_t l1_q = 0, l1_o = 0, l1_m = 0, l1_mc = 0, l1_l = 0;
    uint32_t l1_rs = 0, l1_sink = 0, l1_m2 = 0, l1_l2 = 0, l1_o2 = 0;
    // append_kv: k, v and Vᵀ blocks of 32 rows, the identity and (rope) its scratch
    uint32_t l1_app = 0, l1_app_v = 0, l1_app_vt = 0, l1_app_id = 0, l1_app_rope = 0;
    X dim{}, one{}, dim_bytes{}, rr{};
    X l1{};    // scratch: the L1 address of the tile being described
    X addr{};  // scratch: a device address
    T tq{}, tk{}, tv{}, ts{}, to{}, tm{}, tmc{}, tl{}, trs{}, tsub{}, tsink{}, tm2{}, tl2{}, to2{};
    Q sem{};   // key chunks, and the key splits' merge
    Q qq{};    // the item's queries, their RoPE rows and its sinks
    Q qst{};   // stores, never waited for: the slice's end waits for them
    Q qapp{};  // overlap_append: the rows' loads and their RoPE rows
    X n_slices{};
    // per item: where its output goes, its n queries (rn stacked rows), the first query's
    // position, the causal end of its keys, the head's K and V^T caches, its KV head g and
    // tmp (first the address of its queries)
    X out_base{}, n{}, rn{}, p_first{}, kend{}, kc{}, vc{}, tmp{}, g{};
};

AttentionKernel::AttentionKernel(const AttentionConfig& cfg, const std::string& name)
    : cfg_(cfg), G(cfg.n_head_kv), r(cfg.n_head / cfg.n_head_kv), D(cfg.head_dim),
      Bq(cfg.queries_per_item()), Nk(cfg.keys_per_chunk()),
      M(r * Bq),  // rows of the stacked matrices
      S(cfg.splits()),
      orow(static_cast<uint32_t>(numerics::row_bytes(cfg.out_dtype, cfg.head_dim))),
      kvt(cfg.kv_dtype), kve(cfg.kv_dtype == JAL_DT_F16 ? 2 : 4), b(name)
{}

void AttentionKernel::declare()
{
    q = b.arg("q", JAL_ARG_ADDRESS);
    q_stride = b.arg("q_stride");
    out = b.arg("out", JAL_ARG_ADDRESS);
    out_stride = b.arg("out_stride");
    if (cfg_.batch) {
        // What each entry reads again (heads_offset, q, out, k, v: entries()) shares the
        // first line of the arguments with what is held, so an entry costs at most that
        // line's miss and its list line's, even where the two evict each other.
        list = b.arg("list", JAL_ARG_ADDRESS);
        b.free(b.arg("heads_offset"));
        b.free(q);
        b.free(out);
        if (cfg_.append_kv) {
            b.free(b.arg("k", JAL_ARG_ADDRESS));
            b.free(b.arg("v", JAL_ARG_ADDRESS));
        }
        sinks = b.arg("sinks", JAL_ARG_ADDRESS);
    } else {
        rows = b.arg("rows");
        pos0 = b.arg("pos0");
        heads = b.arg("heads", JAL_ARG_ADDRESS);
        sinks = b.arg("sinks", JAL_ARG_ADDRESS);
        if (cfg_.append_kv) {
            k_rows = b.arg("k", JAL_ARG_ADDRESS);
            v_rows = b.arg("v", JAL_ARG_ADDRESS);
        }
    }
    if (cfg_.rope) {  // read again where used (arg_again): the kernel is short of registers
        b.free(b.arg("cos", JAL_ARG_ADDRESS));
        b.free(b.arg("sin", JAL_ARG_ADDRESS));
    }
    if (!cfg_.batch) {
        // The first item's head-table line too (the table is written with the sequence's
        // slot, never by the work before): its miss then overlaps the previous stage's end
        // instead of delaying the item's first key chunk.
        X t = b.slice_index(), gg = constant(b, S > 1 ? S : G);
        if (S > 1) {  // the first item's head: item = g·S + split
            b.divu(t, t, gg);
            b.li(gg, G);
        }
        b.remu(t, t, gg);
        b.muli(t, t, 16);
        b.add(t, t, heads);
        b.prefetch(t, 0);
        b.free(t);
        b.free(gg);
    }
    b.acquire();  // the arguments load while a staged program's previous stage finishes
    layout_l1();
    qst = b.q();  // before append_kv, which stores with it too
    // The item's semaphores outlive take_registers: prefetch_first_item issues on them.
    sem = b.q();
    qq = b.q();
    if (overlap_append()) qapp = b.q();
}

// Every tile's place in L1, laid out once (a batch's entries reuse it).
void AttentionKernel::layout_l1()
{
    // append_kv: k, v and Vᵀ blocks of 32 rows, the identity, and with rope the blocks'
    // positions, cos and sin rows and two temporaries (half a head each).
    const uint32_t block = kAppendRows * D * 4;
    l1_app = cfg_.append_kv
                 ? b.l1_alloc(3 * block + D * D * 4 +
                              (cfg_.rope ? kAppendRows * 4 + 4 * kAppendRows * D / 2 * 4 : 0))
                 : 0;
    l1_app_v = l1_app + block, l1_app_vt = l1_app + 2 * block, l1_app_id = l1_app + 3 * block;
    l1_app_rope = l1_app_id + D * D * 4;
    l1_q = b.l1_alloc(M * D * 4);
    for (int i = 0; i < kBufs; i++) {
        l1_k[i] = b.l1_alloc(Nk * D * kve);
        l1_v[i] = b.l1_alloc(D * Nk * kve);
        l1_s[i] = b.l1_alloc(M * Nk * 4);
    }
    l1_o = b.l1_alloc(M * D * 4);
    l1_m = b.l1_alloc(M * 4);
    l1_mc = b.l1_alloc(M * 4);
    l1_l = b.l1_alloc(M * 4);
    l1_rs = b.l1_alloc(M * 4);
    l1_sink = b.l1_alloc(r * 4);
    l1_m2 = S > 1 ? b.l1_alloc(M * 4) : 0;
    l1_l2 = S > 1 ? b.l1_alloc(M * 4) : 0;
    l1_o2 = S > 1 ? b.l1_alloc(M * D * 4) : 0;
    l1_ob = orow != D * 4 ? b.l1_alloc(M * orow) : 0;
}

// The attention's constants, scratch registers, tiles and semaphores, taken after
// append_kv has given back its own and given back by release() at the end of a sequence.
void AttentionKernel::take_registers()
{
    dim = constant(b, D);
    one = constant(b, 1);
    dim_bytes = constant(b, D * 4);
    rr = constant(b, r);
    l1 = b.x();
    addr = b.x();
    tq = b.t(), tk = b.t(), tv = b.t(), ts = b.t(), to = b.t();
    tm = b.t(), tmc = b.t(), tl = b.t(), trs = b.t(), tsub = b.t(), tsink = b.t();
    tm2 = b.t(), tl2 = b.t(), to2 = b.t();
}

void AttentionKernel::release()
{
    for (X x : {dim, one, dim_bytes, rr, l1, addr}) b.free(x);
    for (T t : {tq, tk, tv, ts, to, tm, tmc, tl, trs, tsub, tsink, tm2, tl2, to2}) b.free(t);
}

// One sequence's rows (rows, pos0, heads, q, out and with append_kv k_rows and v_rows set):
// their keys and values appended, then every item of theirs this slice runs.
void AttentionKernel::sequence(bool append)
{
    trap_unless_within(b, pos0, rows, cfg_.n_ctx);
    if (append && overlap_append()) {
        Label many = b.label(), appended = b.label();
        if (!cfg_.batch) {  // a batch's rows is 1
            X t = constant(b, 1);
            b.bne(rows, t, many);
            b.free(t);
        }
        append_issue();
        prefetch_first_item();
        append_finish();
        b.jmp(appended);
        b.bind(many);
        if (!cfg_.batch && S > 1)
            append_kv_split();
        else if (!cfg_.batch)
            append_kv();
        b.bind(appended);
    } else if (append) {
        // before the attention's own registers are taken
        if (S > 1)
            append_kv_split();
        else
            append_kv();
    }
    if (append) {
        b.free(k_rows);
        b.free(v_rows);
    }
    take_registers();
    X item0 = b.slice_index();
    n_slices = b.slice_count();
    X n_items = count_items(n_slices);
    for_strided(b, item0, n_items, n_slices, [&](X i) {
        b.free(item0);  // the loop counts from a copy of it: one register more for the item
        item(i);
    });
    for (X x : {n_slices, n_items}) b.free(x);
    release();
}

// A batch: every entry of the list as a sequence of one row, until an entry without a head
// table. q, out, k and v are the arguments' addresses plus the entry's row, read again for
// each entry (cache hits) so that no register holds them across the loop.
void AttentionKernel::entries()
{
    Label top = b.label(), done = b.label();
    b.bind(top);
    heads = b.x();
    b.ld(heads, list, 8);
    {
        Label more = b.label();
        b.bne(heads, zero, more);
        b.jmp(done);
        b.bind(more);
    }
    // The entry's words first, then the arguments' line: where the list's line and the
    // arguments' share a set of the direct-mapped scalar cache, alternating would miss on
    // every read.
    rows = constant(b, 1);
    pos0 = b.x();
    b.lw(pos0, list, 4);
    X row = b.x();
    b.lw(row, list, 0);
    X off = b.arg_again("heads_offset");
    b.add(heads, heads, off);
    b.free(off);
    auto at_row = [&](X& reg, const char* name, X stride) {
        reg = b.arg_again(name);
        X t = b.x();
        b.mul(t, row, stride);
        b.add(reg, reg, t);
        b.free(t);
    };
    at_row(q, "q", q_stride);
    at_row(out, "out", out_stride);
    const bool append = cfg_.append_kv && !appends_first();
    if (append) {  // sequence() gives them back
        at_row(k_rows, "k", q_stride);
        at_row(v_rows, "v", q_stride);
    }
    b.free(row);
    sequence(append);
    for (X x : {rows, pos0, heads, q, out}) b.free(x);
    b.addi(list, list, static_cast<int32_t>(sizeof(AttentionBatchEntry)));
    b.jmp(top);
    b.bind(done);
}

// A batch's appends before any entry attends (appends_first): for each KV head of the
// slice, the k and v rows of up to 32 entries are loaded together, then each is stored into
// its sequence's cache. One row after another (append_kv's order for a sequence of one row)
// would wait for every row's remote load and its head table in turn, at every entry.
// The same instructions on each row as append_block's for a block of one row.
void AttentionKernel::append_entries()
{
    X ns = b.slice_count(), gg = constant(b, G);
    trap_unless_multiple(gg, ns);  // every item of a head runs where its keys were appended
    KvAppendRegs a = append_regs();
    X s0 = b.slice_index();
    unit = constant(b, 1);
    for_strided(b, s0, gg, ns, [&](X head) { append_head(head, a); });
    for (X x : {unit, s0, gg, ns}) b.free(x);
    release_append_regs(a);
}

// kv_append's registers, tiles and L1 blocks of 32 rows, and the identity written.
KvAppendRegs AttentionKernel::append_regs(bool identity)
{
    KvAppendRegs a{};
    a.head_dim = D;
    a.kv_dtype = kvt;
    a.dim = constant(b, D), a.key_bytes = constant(b, D * kve);
    a.ctx_bytes = constant(b, int64_t{cfg_.n_ctx} * kve);
    a.l1 = b.x();
    a.tid = b.t(), a.tk = b.t(), a.tv = b.t(), a.tvt = b.t();
    a.q = b.q();
    a.qst = qst;
    a.l1_k = l1_app, a.l1_v = l1_app_v, a.l1_vt = l1_app_vt;
    if (identity) {
        emit_identity(b, a, l1_app_id);
    } else {  // written by append_issue: described only
        b.li(a.l1, l1_app_id);
        b.tdesc(a.tid, a.l1, a.dim, a.dim, JAL_DT_F32);
    }
    return a;
}

void AttentionKernel::release_append_regs(const KvAppendRegs& a)
{
    for (X x : {a.l1, a.ctx_bytes, a.key_bytes, a.dim}) b.free(x);
    for (T t : {a.tid, a.tk, a.tv, a.tvt}) b.free(t);
    b.free(a.q);
}

// Head `head`'s rows of every entry, 32 entries at a time: their loads issued together,
// then each row stored (store_entry_row).
void AttentionKernel::append_head(X head, KvAppendRegs& a)
{
    // The arguments held (read once: a list line and an argument line in one set of the
    // scalar cache would evict each other at every entry).
    X kb = b.arg_again("k"), vb = b.arg_again("v"), hoff = b.arg_again("heads_offset");
    X block = b.x(), e = b.x(), i = b.x(), t = b.x(), addr = b.x();
    Label top = b.label(), done = b.label();
    b.mov(block, list);
    b.bind(top);
    b.ld(t, block, 8);
    b.beq(t, zero, done);
    // Loads of up to 32 entries' rows from `block`: row i of the k and v blocks.
    b.mov(e, block);
    b.li(i, 0);
    {
        Label more = b.label(), issued = b.label();
        b.bind(more);
        b.ld(t, e, 8);
        b.beq(t, zero, issued);
        b.li(t, kAppendRows);
        b.bge(i, t, issued);
        for (auto [tile, l1_at, base] :
             {std::tuple{a.tk, a.l1_k, kb}, std::tuple{a.tv, a.l1_v, vb}}) {
            b.muli(a.l1, i, static_cast<int32_t>(D * 4));
            b.addi(a.l1, a.l1, static_cast<int32_t>(l1_at));
            b.tdesc(tile, a.l1, unit, a.dim, JAL_DT_F32);
            b.lw(t, e, 0);
            b.mul(t, t, q_stride);
            b.add(addr, base, t);
            b.muli(t, head, static_cast<int32_t>(D * 4));
            b.add(addr, addr, t);
            b.tload(tile, addr, zero, a.q);
        }
        b.addi(i, i, 1);
        b.addi(e, e, static_cast<int32_t>(sizeof(AttentionBatchEntry)));
        b.jmp(more);
        b.bind(issued);
    }
    // Then each row, in the order its loads were issued.
    b.mov(e, i);  // the entries loaded
    b.li(i, 0);
    {
        Label more = b.label(), stored = b.label();
        b.bind(more);
        b.bge(i, e, stored);
        X entry = b.x();
        b.muli(entry, i, static_cast<int32_t>(sizeof(AttentionBatchEntry)));
        b.add(entry, entry, block);
        store_entry_row(a, head, entry, i, hoff);
        b.free(entry);
        b.addi(i, i, 1);
        b.jmp(more);
        b.bind(stored);
    }
    b.muli(e, e, static_cast<int32_t>(sizeof(AttentionBatchEntry)));
    b.add(block, block, e);
    b.jmp(top);
    b.bind(done);
    for (X x : {block, e, i, t, addr, kb, vb, hoff}) b.free(x);
}

// Entry `e`'s row of head `head`, loaded into row i of the k and v blocks, stored into its
// sequence's cache at its position with store_rows, as append_block stores a block.
void AttentionKernel::store_entry_row(KvAppendRegs& a, X head, X e, X i, X heads_off)
{
    X pos = b.x(), kc = b.x(), vc = b.x(), addr = b.x();
    b.lw(pos, e, 4);
    trap_unless_within(b, pos, unit, cfg_.n_ctx);
    b.ld(addr, e, 8);
    b.add(addr, addr, heads_off);
    b.muli(kc, head, 16);
    b.add(addr, addr, kc);
    b.ld(kc, addr, 0);
    b.ld(vc, addr, 8);
    b.wait(a.q, 2);                      // this row's k and v, the earliest pending
    auto at_row = [&](uint32_t block) {  // row i of an L1 block
        b.muli(a.l1, i, static_cast<int32_t>(D * 4));
        b.addi(a.l1, a.l1, static_cast<int32_t>(block));
    };
    at_row(a.l1_k);  // the loads of later rows described tk and tv anew
    b.tdesc(a.tk, a.l1, unit, a.dim, JAL_DT_F32);
    at_row(a.l1_v);
    b.tdesc(a.tv, a.l1, unit, a.dim, JAL_DT_F32);
    store_rows(b, a, pos, unit, kc, vc, addr, at_row);
    for (X x : {pos, kc, vc, addr}) b.free(x);
}

void AttentionKernel::desc(T t, uint32_t l1_off, X nrows, X ncols, jal_dtype dt)
{
    b.li(l1, l1_off);
    b.tdesc(t, l1, nrows, ncols, dt);
}

// t = rows [hh*n, (hh+1)*n) of a stacked matrix at l1_off whose rows are row_bytes long
void AttentionKernel::desc_head(T t, uint32_t l1_off, X hh, X n_rows, X ncols, X row_bytes,
                                jal_dtype dt)
{
    b.mul(l1, hh, n_rows);
    b.mul(l1, l1, row_bytes);
    b.addi(l1, l1, static_cast<int32_t>(l1_off));
    b.tdesc(t, l1, n_rows, ncols, dt);
}

void AttentionKernel::split_index(X sp, X item)
{
    b.li(sp, S);
    b.remu(sp, item, sp);
}

// The item count: query blocks x KV heads x key splits.
X AttentionKernel::count_items(X slices)
{
    if (S > 1) {
        // Every item's splits on consecutive slices of one round: split 0 only receives,
        // the others only send, so no slice waits for one that waits for it.
        X t = constant(b, S);
        trap_unless_multiple(slices, t);
        b.free(t);
    }
    X n_items = b.x();
    X t = constant(b, Bq);
    b.add(n_items, rows, t);
    b.addi(n_items, n_items, -1);
    b.divu(n_items, n_items, t);  // query blocks
    b.muli(n_items, n_items, static_cast<int32_t>(G * S));
    b.free(t);
    return n_items;
}

// The rows' keys and values into the caches of the KV heads this slice attends for (heads
// g ≡ slice mod n), with kv_append's code, before any of its items reads them. It runs
// before the attention's L1 and registers are laid out (its tiles are the attention's,
// described anew later) and frees everything it takes.
void AttentionKernel::append_kv()
{
    KvAppendRegs a = append_regs();
    a.k = k_rows, a.v = v_rows, a.k_stride = q_stride, a.v_stride = q_stride, a.pos0 = pos0;
    KvAppendRope rope = append_rope();
    if (cfg_.rope) a.rope = &rope;
    for_appended_heads([&](X head) {
        X entry = b.x(), col = b.x();
        b.muli(entry, head, 16);
        b.add(entry, entry, heads);
        b.muli(col, head, static_cast<int32_t>(D * 4));
        for_blocks(b, zero, rows, kAppendRows,
                   [&](X row0, X nr) { append_block(b, a, entry, col, row0, nr); });
        b.free(col);
        b.free(entry);
    });
    release_append_regs(a);
    release_append_rope(rope);
}

// Key splits with append_kv: an item's keys are cut into S ranges (key_start) and each
// item appends the rows whose positions fall in its own range, so an appended key is read
// only by the slice that stored it, in issue order on its DMA engine. The store writes
// every copy of the head's cache (the caller replicates a head over its splits' slices:
// kv_head_masks), where later calls' other splits find it. One query block (rows <= Bq),
// so that every item of a head cuts the same ranges.
void AttentionKernel::append_kv_split()
{
    linear::detail::emit_trap_unless_at_most(b, rows, Bq);
    with_spare_arguments([&] { append_kv_split_rows(); });
}

void AttentionKernel::append_kv_split_rows()
{
    KvAppendRegs a = append_regs();
    a.k = k_rows, a.v = v_rows, a.k_stride = q_stride, a.v_stride = q_stride, a.pos0 = pos0;
    KvAppendRope rope = append_rope();
    if (cfg_.rope) a.rope = &rope;
    X kstart = b.x(), per = b.x();  // the block's first key, and a split's share of keys
    X s0 = b.slice_index(), ns = b.slice_count(), n_items = constant(b, S);
    trap_unless_multiple(ns, n_items);  // before anything is stored (count_items checks too)
    first_key(kstart, pos0);
    b.add(per, pos0, rows);
    split_share(per, kstart, per, n_items);
    b.li(n_items, G * S);
    for_strided(b, s0, n_items, ns, [&](X it) {
        b.free(s0);
        X sp = b.x(), head = b.x(), r0 = b.x(), r1 = b.x();
        b.li(sp, S);
        b.divu(head, it, sp);
        b.remu(sp, it, sp);
        b.mul(r0, sp, per);  // the split's positions [r0, r1), clipped to the rows'
        b.add(r0, r0, kstart);
        b.add(r1, r0, per);
        b.max(r0, r0, pos0);
        b.add(sp, pos0, rows);
        b.min(r1, r1, sp);
        Label none = b.label();
        b.bge(r0, r1, none);
        b.sub(r0, r0, pos0);
        b.sub(r1, r1, pos0);
        b.muli(sp, head, static_cast<int32_t>(D * 4));  // the head's columns in a row
        b.muli(head, head, 16);
        b.add(head, head, heads);  // its head-table entry
        for_blocks(b, r0, r1, kAppendRows,
                   [&](X row0, X nr) { append_block(b, a, head, sp, row0, nr); });
        b.bind(none);
        for (X x : {r1, r0, head, sp}) b.free(x);
    });
    for (X x : {n_items, ns, per, kstart}) b.free(x);
    release_append_regs(a);
    release_append_rope(rope);
}

// The first key a block of queries from position `first` sees: first - window + 1 (not
// below 0), or 0.
void AttentionKernel::first_key(X kstart, X first)
{
    if (cfg_.window) {
        b.addi(kstart, first, 1 - static_cast<int32_t>(cfg_.window));
        b.max(kstart, kstart, zero);
    } else {
        b.li(kstart, 0);
    }
}

// A split's share of the keys [kstart, end) (split_share_rounding); per may be end, and
// scratch holds S after.
void AttentionKernel::split_share(X per, X kstart, X end, X scratch)
{
    b.sub(per, end, kstart);
    b.addi(per, per, split_share_rounding());
    b.li(scratch, S);
    b.divu(per, per, scratch);
}

// body() with q's output, its stride and the sinks' registers given back (read again
// after): the appends with key splits are short of registers.
void AttentionKernel::with_spare_arguments(const std::function<void()>& body)
{
    for (X x : {out, out_stride, sinks}) b.free(x);
    body();
    out = b.arg_again("out");
    out_stride = b.arg_again("out_stride");
    sinks = b.arg_again("sinks");
}

// body(head) for each KV head whose row (a decode row: overlap_append) this slice appends,
// in the same order each time: with one key split the heads g ≡ slice mod n (every item of
// a head runs on the slice that appends it); with S, the heads of the slice's items whose
// split's share holds the row's position.
void AttentionKernel::for_appended_heads(const std::function<void(X head)>& body)
{
    X ns = b.slice_count();
    if (S == 1) {
        X gg = constant(b, G);
        trap_unless_multiple(gg, ns);
        X s0 = b.slice_index();
        for_strided(b, s0, gg, ns, body);
        b.free(s0);
        b.free(gg);
        b.free(ns);
        return;
    }
    X own = b.x(), t = constant(b, S);
    trap_unless_multiple(ns, t);
    {
        X per = b.x();
        first_key(own, pos0);
        b.add(per, pos0, rows);
        split_share(per, own, per, t);
        b.sub(own, pos0, own);
        b.divu(own, own, per);  // the split that holds the row
        b.free(per);
    }
    b.li(t, G * S);
    X s0 = b.slice_index();
    for_strided(b, s0, t, ns, [&](X item) {
        X head = b.x();
        Label skip = b.label();
        b.li(head, S);
        b.remu(head, item, head);
        b.bne(head, own, skip);
        b.li(head, S);
        b.divu(head, item, head);
        body(head);
        b.bind(skip);
        b.free(head);
    });
    for (X x : {s0, t, own, ns}) b.free(x);
}

// The keys' RoPE scratch of append_kv (cfg_.rope; else nothing is taken): L1 after the
// append blocks and the identity, constants and tiles.
KvAppendRope AttentionKernel::append_rope()
{
    KvAppendRope rope{};
    if (!cfg_.rope) return rope;
    uint32_t at = l1_app_rope;
    const uint32_t half_block = kAppendRows * D / 2 * 4;
    rope.l1_idx = at, at += kAppendRows * 4;
    rope.l1_c = at, rope.l1_s = at + half_block, rope.l1_a = at + 2 * half_block,
    rope.l1_b = at + 3 * half_block;
    rope.table_row = constant(b, D / 2 * 4), rope.half = constant(b, D / 2);
    rope.one = cfg_.batch ? rows : constant(b, 1);  // a batch's rows is 1: a register less
    rope.tidx = b.t(), rope.tc = b.t(), rope.ts = b.t(), rope.x0 = b.t(), rope.x1 = b.t();
    rope.ta = b.t(), rope.tb = b.t();
    return rope;
}

void AttentionKernel::release_append_rope(const KvAppendRope& rope)
{
    if (!cfg_.rope) return;
    for (X x : {rope.table_row, rope.half}) b.free(x);
    if (!cfg_.batch) b.free(rope.one);
    for (T t : {rope.tidx, rope.tc, rope.ts, rope.x0, rope.x1, rope.ta, rope.tb}) b.free(t);
}

// overlap_append, first part: the RoPE rows of the entry's position, then the k and v rows
// of each KV head the slice appends (for_appended_heads) into row j of the append blocks
// (its j-th), all on qapp and none waited for.
void AttentionKernel::append_issue()
{
    KvAppendRegs a = append_regs();
    KvAppendRope rope = append_rope();
    gather_rope_rows(b, rope, pos0, rows, a.l1, qapp, 0, false);
    X j = b.x(), at = b.x();
    b.li(j, 0);
    for_appended_heads([&](X head) {
        for (auto [tile, block, base] :
             {std::tuple{a.tk, a.l1_k, k_rows}, std::tuple{a.tv, a.l1_v, v_rows}}) {
            b.muli(a.l1, j, static_cast<int32_t>(D * 4));
            b.addi(a.l1, a.l1, static_cast<int32_t>(block));
            b.tdesc(tile, a.l1, rows, a.dim, JAL_DT_F32);
            b.muli(at, head, static_cast<int32_t>(D * 4));
            b.add(at, at, base);
            b.tload(tile, at, q_stride, qapp);
        }
        b.addi(j, j, 1);
    });
    for (X x : {j, at}) b.free(x);
    release_append_regs(a);
    release_append_rope(rope);
}

// overlap_append, middle part: the slice's first item's queries, RoPE rows and sinks, and
// its first key chunk when that ends at or before the first appended position (a slice's
// DMA ops run in issue order, so a chunk that holds an appended key loads after the
// stores: item() issues it then).
void AttentionKernel::prefetch_first_item()
{
    take_registers();
    X i = b.slice_index();
    Label none = b.label();
    {
        X ns = b.slice_count();
        X n_items = count_items(ns);
        b.bge(i, n_items, none);  // (registers are allocated statically: freed on both paths)
        b.free(n_items);
        b.free(ns);
    }
    locate(i);
    issue_queries();
    if (Bq < 64) {  // decode items: their first chunk loads before the queries are waited for
        b.ld(vc, kc, 8);
        b.ld(kc, kc, 0);
        X kstart = key_start(i), end = first_chunk_end(kstart);
        Label skip = b.label(), whole = b.label();
        b.bge(pos0, end, whole);
        if (partial_window()) {  // a full window: its keys before the appended one
            b.addi(end, kstart, static_cast<int32_t>(cfg_.window - 1));
            b.bne(end, pos0, skip);
            load_window_but_last(kstart);
        }
        b.jmp(skip);
        b.bind(whole);
        first_chunk(kstart);
        b.bind(skip);
        b.free(end);
        b.free(kstart);
    }
    for (X x : {out_base, n, rn, p_first, kend, kc, vc, tmp, g}) b.free(x);
    b.bind(none);
    b.free(i);
    release();
}

// overlap_append, last part: each head's rows (row j of the blocks) rotated and stored
// into its caches, in the order append_issue loaded them.
void AttentionKernel::append_finish()
{
    if (S > 1)
        with_spare_arguments([&] { append_finish_rows(); });
    else
        append_finish_rows();
}

// append_finish's rows.
void AttentionKernel::append_finish_rows()
{
    KvAppendRegs a = append_regs(false);
    KvAppendRope rope = append_rope();
    for (auto [t, at] : {std::pair{rope.tc, rope.l1_c}, std::pair{rope.ts, rope.l1_s},
                         std::pair{rope.ta, rope.l1_a}, std::pair{rope.tb, rope.l1_b}}) {
        b.li(a.l1, at);
        b.tdesc(t, a.l1, rows, rope.half, JAL_DT_F32);
    }
    b.wait(qapp, 2);  // the RoPE rows, issued first
    X j = b.x(), entry = b.x(), kc = b.x(), vc = b.x(), at = b.x();
    b.li(j, 0);
    for_appended_heads([&](X head) {
        b.muli(entry, head, 16);
        b.add(entry, entry, heads);
        b.ld(kc, entry, 0);
        b.ld(vc, entry, 8);
        b.wait(qapp, 2);  // this head's k and v rows, the earliest pending
        // Row j of an append block; the Vᵀ block's j-th D × 1 column block, so that the first
        // head's stays for fill_window_last.
        auto at_row = [&](uint32_t block) {
            b.li(a.l1, block);
            b.muli(entry, j, static_cast<int32_t>(D * 4));
            b.add(a.l1, a.l1, entry);
        };
        at_row(a.l1_v);
        b.tdesc(a.tv, a.l1, rows, a.dim, JAL_DT_F32);
        at_row(a.l1_k);
        b.tdesc(a.tk, a.l1, rows, a.dim, JAL_DT_F32);
        rotate_head_rows(b, rope, a.l1, rows, D, D * 4);
        store_rows(b, a, pos0, rows, kc, vc, at, at_row);
        b.addi(j, j, 1);
    });
    for (X x : {j, entry, kc, vc, at}) b.free(x);
    release_append_regs(a);
    release_append_rope(rope);
}

// The item's queries (each head of the group as n rows, stacked head-major), the RoPE
// tables' rows for their positions p_first.. (cfg_.rope) and the group's sinks, all on qq;
// item() waits for them once the first key chunk's loads are out too. The RoPE rows go to
// the third key buffer (decode items use two; prompt items load it only after the queries
// are rotated), through tiles the item describes anew later (tk, tv, ts and the running
// state's to, tm, tmc, tl).
void AttentionKernel::issue_queries()
{
    move_heads(l1_q, tmp, q_stride, false, qq);
    if (cfg_.rope) {
        KvAppendRope rp = rope_scratch();
        rp.table_row = constant(b, D / 2 * 4);
        gather_rope_rows(b, rp, p_first, n, l1, qq, 0, false);
        b.free(rp.table_row);
        b.free(rp.half);
    }
    if (cfg_.sinks) {
        desc(tsink, l1_sink, one, rr);
        b.muli(addr, g, static_cast<int32_t>(r * 4));
        b.add(addr, addr, sinks);  // the group's first head's sink
        b.tload(tsink, addr, dim_bytes, qq);
    }
}

// How many transfers issue_queries put on qq.
int AttentionKernel::query_transfers() const
{
    return static_cast<int>(r) + (cfg_.rope ? 2 : 0) + (cfg_.sinks ? 1 : 0);
}

KvAppendRope AttentionKernel::rope_scratch()
{
    KvAppendRope rp{};
    const uint32_t idx_bytes = (Bq * 4 + 63) / 64 * 64, half_rows = Bq * D / 2 * 4;
    rp.l1_idx = l1_k[2], rp.l1_c = l1_k[2] + idx_bytes, rp.l1_s = rp.l1_c + half_rows;
    rp.l1_a = rp.l1_s + half_rows, rp.l1_b = rp.l1_a + half_rows;
    rp.tidx = tk, rp.tc = tv, rp.ts = ts, rp.x0 = to, rp.x1 = tm, rp.ta = tmc, rp.tb = tl;
    rp.half = constant(b, D / 2), rp.one = one;
    return rp;
}

// The queries rotated by the rows issue_queries loaded (tc and ts still describe them).
void AttentionKernel::rotate_queries()
{
    KvAppendRope rp = rope_scratch();
    // tc (tv) was described anew by the first key chunk's load since
    for (auto [t, at] : {std::pair{rp.tc, rp.l1_c}, std::pair{rp.ts, rp.l1_s},
                         std::pair{rp.ta, rp.l1_a}, std::pair{rp.tb, rp.l1_b}}) {
        b.li(l1, at);
        b.tdesc(t, l1, n, rp.half, JAL_DT_F32);
    }
    b.for_range(zero, rr, 1, [&](X hh) {  // head hh: rows hh·n.. of the stacked queries
        b.mul(l1, hh, n);
        b.muli(l1, l1, static_cast<int32_t>(D * 4));
        b.addi(l1, l1, static_cast<int32_t>(l1_q));
        rotate_head_rows(b, rp, l1, n, D, D * 4);
    });
    b.free(rp.half);
}

CodeObject AttentionKernel::build()
{
    declare();
    if (appends_first()) append_entries();
    if (cfg_.batch)
        entries();
    else
        sequence(cfg_.append_kv);
    b.end();
    return b.finish();
}

// The item's registers: its place in the query blocks and KV heads (item = (query block * G
// + g) * S + split), its keys' caches, and the addresses of its queries and output.
void AttentionKernel::locate(X item)
{
    out_base = b.x(), n = b.x(), rn = b.x(), p_first = b.x(), kend = b.x(), kc = b.x(), vc = b.x(),
    tmp = b.x();
    g = b.x();
    X t0 = b.x(), head_col = b.x();
    b.li(tmp, S);
    b.divu(t0, item, tmp);
    b.li(tmp, G);
    b.remu(g, t0, tmp);
    b.divu(t0, t0, tmp);
    b.muli(t0, t0, static_cast<int32_t>(Bq));
    b.sub(n, rows, t0);
    b.li(tmp, Bq);
    b.min(n, n, tmp);
    b.muli(rn, n, static_cast<int32_t>(r));
    b.add(p_first, pos0, t0);
    b.add(kend, p_first, n);  // one past the last query's position: the causal end
    b.muli(kc, g, 16);
    b.add(kc, kc, heads);  // the head table's entry: item() reads it (kc and vc)
    // the group's first query head as a byte offset in a row of q or out
    if (orow != D * 4)
        b.muli(head_col, g, static_cast<int32_t>(r * orow));  // converted out
    else
        b.muli(head_col, g, static_cast<int32_t>(r * D * 4));
    b.mul(out_base, t0, out_stride);
    b.add(out_base, out_base, out);
    b.add(out_base, out_base, head_col);
    if (orow != D * 4) b.muli(head_col, g, static_cast<int32_t>(r * D * 4));
    b.mul(tmp, t0, q_stride);
    b.add(tmp, tmp, q);
    b.add(tmp, tmp, head_col);
    b.free(head_col);
    b.free(t0);
}

// Each head of the group as n rows of the stacked matrix at l1_off, to or from its
// columns of the rows at base, each transfer signalling q (the caller waits, if at all).
// dt, row_bytes: a converted output's format and the bytes of one head's row in it (tmp
// holds them while the heads move).
void AttentionKernel::move_heads(uint32_t l1_off, X base, X stride, bool store, Q q, jal_dtype dt,
                                 uint32_t row_bytes)
{
    if (row_bytes) b.li(tmp, row_bytes);
    b.for_range(zero, rr, 1, [&](X hh) {
        desc_head(tsub, l1_off, hh, n, dim, row_bytes ? tmp : dim_bytes, dt);
        b.muli(addr, hh, static_cast<int32_t>(row_bytes ? row_bytes : D * 4));
        b.add(addr, addr, base);
        if (store)
            b.tstore(tsub, addr, stride, q);
        else
            b.tload(tsub, addr, stride, q);
    });
}

// running state: O = 0; m = sink or -FLT_MAX; l = 1 or 0
void AttentionKernel::start_state(X item)
{
    desc(to, l1_o, rn, dim);
    desc(tm, l1_m, rn, one);
    desc(tmc, l1_mc, rn, one);
    desc(tl, l1_l, rn, one);
    desc(trs, l1_rs, rn, one);
    b.vfill(to, 0.0f);
    Label no_sink = b.label(), state_done = b.label();
    if (cfg_.sinks) {
        if (S > 1) {  // only split 0 starts from the sink
            X sp = b.x();
            split_index(sp, item);
            b.bne(sp, zero, no_sink);
            b.free(sp);
        }
        b.vfill(tm, 0.0f);
        b.for_range(zero, rr, 1, [&](X hh) {  // head hh's sink, loaded by issue_queries
            b.muli(l1, hh, 4);
            b.addi(l1, l1, static_cast<int32_t>(l1_sink));
            b.tdesc(tsink, l1, one, one, JAL_DT_F32);
            b.li(addr, 4);
            desc_head(tsub, l1_m, hh, n, one, addr);
            b.vadd(tsub, tsub, tsink);  // 1 x 1 broadcast
        });
        b.vfill(tl, 1.0f);
        b.jmp(state_done);
    }
    b.bind(no_sink);
    b.vfill(tm, -FLT_MAX);
    b.vfill(tl, 0.0f);
    b.bind(state_done);
}

// The first key the item's split reads (a new register); kend is clipped to its share.
X AttentionKernel::key_start(X item)
{
    // the keys any query of the block sees: [p_first - window + 1, p_last]
    X kstart = b.x();
    first_key(kstart, p_first);
    if (S > 1) {
        // this split's share: [kstart + split*per, kstart + (split+1)*per) within kend
        X per = b.x(), sp = b.x();
        split_share(per, kstart, kend, sp);
        b.remu(sp, item, sp);
        b.mul(sp, sp, per);
        b.add(kstart, kstart, sp);
        b.add(sp, kstart, per);
        b.min(kend, kend, sp);
        b.free(sp);
        b.free(per);
    }
    return kstart;
}

// Keys in chunk k0: min(kend − k0, Nk), in a new register.
X AttentionKernel::chunk_keys(X k0)
{
    X nk = b.x();
    b.sub(nk, kend, k0);
    b.li(tmp, Nk);
    b.min(nk, nk, tmp);
    return nk;
}

// Issues the loads of chunk k0's keys and Vᵀ columns into buffer buf (two signals on sem).
void AttentionKernel::load_kv(X k0, int buf)
{
    X nk = chunk_keys(k0);
    desc(tk, l1_k[buf], nk, dim, kvt);
    b.muli(addr, k0, static_cast<int32_t>(D * kve));
    b.add(addr, addr, kc);
    b.tload(tk, addr, zero, sem);  // the cache's keys are packed rows
    desc(tv, l1_v[buf], dim, nk, kvt);
    b.muli(addr, k0, static_cast<int32_t>(kve));
    b.add(addr, addr, vc);
    b.li(tmp, int64_t{cfg_.n_ctx} * kve);
    b.tload(tv, addr, tmp, sem);
    b.free(nk);
}

// Waits for chunk k0's loads (the two earliest pending on sem), then S = (scale Q) Kᵀ into
// buffer buf, which was cleared before.
void AttentionKernel::scores(X k0, int buf)
{
    X nk = chunk_keys(k0);
    b.wait(sem, 2);
    desc(tk, l1_k[buf], nk, dim, kvt);
    desc(ts, l1_s[buf], rn, nk);
    b.mma(ts, tq, tk);
    b.free(nk);
}

// VMASK only where some key of the chunk is invisible to some query of the item: a key past
// the first query's position, or (with a window) one the last query no longer sees.
void AttentionKernel::mask_if_needed(X k0, X nk, int buf)
{
    Label mask = b.label(), skip = b.label();
    const X t = addr;  // scratch (registers are short here)
    b.add(t, k0, nk);
    b.addi(t, t, -1);
    b.blt(p_first, t, mask);  // the last key is after the first query
    if (cfg_.window) {
        // the last query (p_first + n − 1) a window or more past the first key k0
        b.add(t, p_first, n);
        b.addi(t, t, -static_cast<int32_t>(cfg_.window));
        b.blt(k0, t, mask);
    }
    b.jmp(skip);
    b.bind(mask);
    b.muli(tmp, nk, 4);
    b.for_range(zero, rr, 1, [&](X hh) {
        desc_head(tsub, l1_s[buf], hh, n, nk, tmp);
        b.vmask(tsub, p_first, k0, cfg_.window);
    });
    b.bind(skip);
}

// The online-softmax update of m, l and O by chunk k0's scores in buffer buf: P = exp(S −
// m'), l = l·α + Σ P, O = O·α + P V with α = exp(m − m'). The O·α comes last so that the
// other vector work overlaps the previous chunk's P V.
void AttentionKernel::update(X k0, int buf)
{
    X nk = chunk_keys(k0);
    mask_if_needed(k0, nk, buf);
    desc(ts, l1_s[buf], rn, nk);
    b.vredmax(tmc, ts);
    b.vmax(tmc, tmc, tm);  // m'
    b.vsub(ts, ts, tmc);
    b.vexp(ts, ts);  // P
    b.vsub(tm, tm, tmc);
    b.vexp(tm, tm);  // alpha = exp(m - m')
    b.vmul(tl, tl, tm);
    b.vredsum(trs, ts);
    b.vadd(tl, tl, trs);
    b.vmul(to, to, tm);
    b.free(nk);
}

// Buffer buf's scores (all Nk columns) set to zero for the next Q·Kᵀ.
void AttentionKernel::clear_scores(int buf)
{
    b.li(l1, l1_s[buf]);
    b.li(tmp, Nk);
    b.tdesc(ts, l1, rn, tmp, JAL_DT_F32);
    b.vfill(ts, 0.0f);
}

// O += P V for chunk k0 in buffer buf (Vᵀ is the weight-layout operand), then m = m'.
void AttentionKernel::accumulate_pv(X k0, int buf)
{
    X nk = chunk_keys(k0);
    desc(ts, l1_s[buf], rn, nk);
    desc(tv, l1_v[buf], dim, nk, kvt);
    b.mma(to, ts, tv);
    b.free(nk);
    b.vcopy(tm, tmc);
}

// The key chunks from kstart to kend, software-pipelined over kBufs buffers: while chunk
// c's softmax runs on the vector engine, chunk c+1's Q·Kᵀ runs on the matrix engine and
// chunk c+2's keys and values load. Each chunk's arithmetic is the unpipelined loop's.
void AttentionKernel::keys(X k0)
{
    X kn = b.x();
    Label top = b.label(), out = b.label();
    b.bge(k0, kend, out);
    load_kv(k0, 0);
    {
        Label one = b.label();
        b.addi(kn, k0, static_cast<int32_t>(Nk));
        b.bge(kn, kend, one);
        load_kv(kn, 1);
        b.bind(one);
    }
    clear_scores(0);  // the first chunk's (the loop clears the others)
    scores(k0, 0);
    b.bind(top);
    for (int slot = 0; slot < kBufs; slot++) {
        const int next = (slot + 1) % kBufs, after = (slot + 2) % kBufs;
        Label no_next = b.label(), no_after = b.label();
        b.bge(k0, kend, out);
        b.addi(kn, k0, static_cast<int32_t>(Nk));
        {  // clear the next chunk's scores before this chunk's vector work
            Label skip = b.label();
            b.bge(kn, kend, skip);
            clear_scores(next);
            b.bind(skip);
        }
        update(k0, slot);
        b.bge(kn, kend, no_next);
        scores(kn, next);
        b.bind(no_next);
        accumulate_pv(k0, slot);
        b.addi(k0, kn, static_cast<int32_t>(Nk));  // the chunk after next
        b.bge(k0, kend, no_after);
        load_kv(k0, after);
        b.bind(no_after);
        b.addi(k0, kn, 0);
    }
    b.jmp(top);
    b.bind(out);
    b.free(kn);
}

// The key chunks two buffers deep, for items of few query rows (decode): chunk c+1 loads
// while chunk c's Q·Kᵀ, softmax and P·V run one after another. With few rows the matrix and
// vector work of a chunk is short, and this order (no chunk's Q·Kᵀ waiting for the next
// chunk's keys before the P·V is issued) measured a third faster than keys() at 8k keys.
// The same arithmetic in the same order as keys().
// Chunk k0's loads into buffer 0, if the item has keys from k0.
void AttentionKernel::first_chunk(X k0)
{
    Label none = b.label();
    b.bge(k0, kend, none);
    load_kv(k0, 0);
    b.bind(none);
}

// Branches to `other` unless prefetch_first_item issued this item's loads: the slice's
// first item of a call of one row (a batch's entries are). addr is scratch.
void AttentionKernel::unless_prefetched(X item, Label other)
{
    b.movsr(addr, JAL_SR_SLICE);
    b.bne(item, addr, other);
    if (cfg_.batch) return;
    b.li(addr, 1);
    b.bne(rows, addr, other);
}

// One past the first chunk's last key, in a new register: kstart + Nk, or (key splits) the
// split's end where that comes first.
X AttentionKernel::first_chunk_end(X kstart)
{
    X end = b.x();
    b.addi(end, kstart, static_cast<int32_t>(Nk));
    if (S > 1) b.min(end, end, kend);
    return end;
}

// item()'s first key chunk, unless prefetch_first_item loaded it: the slice's first item
// whose chunk ends at or before the first appended position. addr is scratch.
void AttentionKernel::first_chunk_unless_prefetched(X item, X kstart)
{
    Label load = b.label(), done = b.label();
    unless_prefetched(item, load);
    X end = first_chunk_end(kstart);
    b.bge(pos0, end, done);
    b.free(end);
    if (partial_window()) {
        b.addi(addr, kstart, static_cast<int32_t>(cfg_.window - 1));
        b.bne(addr, pos0, load);
        fill_window_last();
        b.jmp(done);
    }
    b.bind(load);
    first_chunk(kstart);
    b.bind(done);
}

// The first window − 1 keys of a full window from kstart into buffer 0 (two signals on
// sem, as load_kv's): K's rows, and Vᵀ's columns in rows as long as the window's.
void AttentionKernel::load_window_but_last(X kstart)
{
    const uint32_t w = cfg_.window;
    X count = constant(b, w - 1);
    desc(tk, l1_k[0], count, dim, kvt);
    b.muli(addr, kstart, static_cast<int32_t>(D * kve));
    b.add(addr, addr, kc);
    b.tload(tk, addr, zero, sem);
    b.li(l1, l1_v[0]);
    b.tdesc(tv, l1, dim, count, kvt, w * kve);
    b.muli(addr, kstart, static_cast<int32_t>(kve));
    b.add(addr, addr, vc);
    b.li(tmp, int64_t{cfg_.n_ctx} * kve);
    b.tload(tv, addr, tmp, sem);
    b.free(count);
}

// The appended key and value, in the cache's format where append_finish left them (row 0
// of the append's key block, its first Vᵀ column), as the window's last key and Vᵀ column.
void AttentionKernel::fill_window_last()
{
    const uint32_t w = cfg_.window;
    b.li(l1, l1_app);
    b.tdesc(tsub, l1, one, dim, kvt);
    b.li(l1, l1_k[0] + (w - 1) * D * kve);
    b.tdesc(tk, l1, one, dim, kvt);
    b.vcopy(tk, tsub);
    b.li(l1, l1_app_vt);
    b.tdesc(tsub, l1, dim, one, kvt);
    b.li(l1, l1_v[0] + (w - 1) * kve);
    b.tdesc(tv, l1, dim, one, kvt, w * kve);
    b.vcopy(tv, tsub);
}

void AttentionKernel::keys_two_deep(X k0)
{
    X kn = b.x();
    Label top = b.label(), out = b.label();
    b.bind(top);
    for (int slot = 0; slot < 2; slot++) {
        Label no_next = b.label();
        b.bge(k0, kend, out);
        b.addi(kn, k0, static_cast<int32_t>(Nk));
        b.bge(kn, kend, no_next);
        load_kv(kn, 1 - slot);
        b.bind(no_next);
        X nk = chunk_keys(k0);
        desc(ts, l1_s[slot], rn, nk);
        b.vfill(ts, 0.0f);
        b.free(nk);
        scores(k0, slot);  // waits for chunk k0's loads: the earliest pending on sem
        update(k0, slot);
        accumulate_pv(k0, slot);
        b.addi(k0, kn, 0);
    }
    b.jmp(top);
    b.bind(out);
    b.free(kn);
}

// Splits 1..S-1 send their (m, l, O) to split 0's slice and go to item_done; split 0
// merges them in split order: m' = max(m, m2), l = l e^(m-m') + l2 e^(m2-m'), same for O.
void AttentionKernel::merge_splits(X item, Label item_done)
{
    X sp = b.x(), peer = b.x();
    Label merge = b.label();
    split_index(sp, item);
    b.beq(sp, zero, merge);
    b.sub(peer, item, sp);
    b.remu(peer, peer, n_slices);
    b.send(tm, peer, sem);
    b.send(tl, peer, sem);
    b.send(to, peer, sem);
    b.wait(sem, 3);
    b.jmp(item_done);
    b.bind(merge);
    desc(tm2, l1_m2, rn, one);
    desc(tl2, l1_l2, rn, one);
    desc(to2, l1_o2, rn, dim);
    b.li(sp, S);
    b.for_range(one, sp, 1, [&](X j) {
        b.add(peer, item, j);
        b.remu(peer, peer, n_slices);
        b.recv(tm2, peer, sem);
        b.recv(tl2, peer, sem);
        b.recv(to2, peer, sem);
        b.wait(sem, 3);
        b.vmax(tmc, tm, tm2);
        b.vsub(tm, tm, tmc);
        b.vexp(tm, tm);
        b.vsub(tm2, tm2, tmc);
        b.vexp(tm2, tm2);
        b.vmul(tl, tl, tm);
        b.vmul(tl2, tl2, tm2);
        b.vadd(tl, tl, tl2);
        b.vmul(to, to, tm);
        b.vmul(to2, to2, tm2);
        b.vadd(to, to, to2);
        b.vcopy(tm, tmc);
    });
    b.free(peer);
    b.free(sp);
}

// The normalised O converted to the output's format (tk, free now, describes it), then
// stored head by head.
void AttentionKernel::store_converted()
{
    b.li(l1, l1_ob);
    b.tdesc(tk, l1, rn, dim, cfg_.out_dtype);
    b.vcvt(tk, to, cfg_.out_cvt);
    move_heads(l1_ob, out_base, out_stride, true, qst, cfg_.out_dtype, orow);
}

void AttentionKernel::item(X item)
{
    locate(item);
    // The queries, their RoPE rows and the sinks, then (decode items) the first key chunk:
    // all of them in flight before the item waits for any (with overlap_append, the
    // slice's first item issued them before the rows were stored).
    Label issue = b.label(), issued = b.label();
    if (overlap_append()) {
        unless_prefetched(item, issue);
        b.jmp(issued);
    }
    b.bind(issue);
    issue_queries();
    b.bind(issued);
    b.ld(vc, kc, 8);  // the group's caches, read while the queries load
    b.ld(kc, kc, 0);
    X kstart = key_start(item);
    const bool two_deep = Bq < 64;  // prompt items pipeline three chunks deep, decode two
    if (two_deep && overlap_append())
        first_chunk_unless_prefetched(item, kstart);
    else if (two_deep)
        first_chunk(kstart);
    b.wait(qq, query_transfers());
    if (cfg_.rope) rotate_queries();
    desc(tq, l1_q, rn, dim);
    b.vscale(tq, tq, cfg_.softmax_scale());
    start_state(item);
    b.free(g);

    if (two_deep)
        keys_two_deep(kstart);
    else
        keys(kstart);
    b.free(kstart);

    Label item_done = b.label();
    if (S > 1) merge_splits(item, item_done);
    b.vrecip(tl, tl);
    b.vmul(to, to, tl);
    if (orow != D * 4)
        store_converted();
    else
        move_heads(l1_o, out_base, out_stride, true, qst);
    b.bind(item_done);
    b.free(tmp);
    b.free(vc);
    b.free(kc);
    b.free(kend);
    b.free(p_first);
    b.free(rn);
    b.free(n);
    b.free(out_base);
}

}  // namespace

CodeObject emit_attention(const AttentionConfig& cfg, const std::string& name)
{
    return AttentionKernel(cfg, name).build();
}

}  // namespace jal::kernels::transformer_detail
