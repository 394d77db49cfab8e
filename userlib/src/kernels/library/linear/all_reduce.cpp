// Ring all-reduce of F32 vectors across slices (collective.hpp).
#include <jal/kernels/library/collective.hpp>

#include <algorithm>

#include "checks.hpp"
#include "emit.hpp"
#include "tiles.hpp"

namespace jal::kernels::linear {

using namespace detail;

namespace {
constexpr uint32_t kSegment = 512u
                              << 10;  // elements: 2 MiB of vector plus up to half of it as a chunk
}  // namespace

std::string all_reduce_name(const AllReduceConfig& c)
{
    return "all_reduce_f32_l" + std::to_string(c.length);
}

namespace {

// The generator: the vector in segments that fit L1, each reduced around the ring of
// slices (reduce-scatter, then all-gather) in chunks of ceil(len / n).
class AllReduceKernel {
public:
    explicit AllReduceKernel(const AllReduceConfig& c);
    CodeObject build();

private:
    void declare();
    void segment(uint32_t off, uint32_t len);
    void chunk_tile(T t, X index, X cl);
    void ring_step(X i, bool gather);

    const AllReduceConfig& c;
    const uint32_t seg_max;
    Builder b;
    X s{}, n{}, mine{}, one{}, four{}, right{}, left{};
    uint32_t l1_vec = 0, l1_tmp = 0;
    T tvec{}, tsend{}, trecv{}, tsum{};
    Q qio{}, qs{}, qr{};
    // per segment: its length, the chunk length, the ring index and the sent and received
    // chunks' lengths
    X len_reg{}, chunk{}, idx{}, cls{}, clr{};
};

AllReduceKernel::AllReduceKernel(const AllReduceConfig& config)
    : c(config), seg_max(std::min(config.length, kSegment)), b(all_reduce_name(config))
{}

void AllReduceKernel::declare()
{
    X table = b.arg("vectors", JAL_ARG_ADDRESS);
    s = b.slice_index();
    n = b.slice_count();
    mine = emit_table_entry(b, table, s);
    b.free(table);
    one = emit_const(b, 1);
    four = emit_const(b, 4);
    right = b.x(), left = b.x();  // s+1 and s−1, mod n
    b.addi(right, s, 1);
    b.remu(right, right, n);
    b.add(left, s, n);
    b.addi(left, left, -1);
    b.remu(left, left, n);

    l1_vec = b.l1_alloc(seg_max * 4);
    l1_tmp = b.l1_alloc(static_cast<uint32_t>(ceil_div(seg_max, 2) * 4));  // a chunk, n >= 2
    tvec = b.t(), tsend = b.t(), trecv = b.t(), tsum = b.t();
    qio = b.q(), qs = b.q(), qr = b.q();
}

// Describes chunk (index mod n) of the segment as tile t; leaves its length in `cl`.
void AllReduceKernel::chunk_tile(T t, X index, X cl)
{
    X a = b.x();
    b.remu(a, index, n);
    emit_share_of(b, a, chunk, len_reg, a, cl);
    b.muli(a, a, 4);
    b.addi(a, a, static_cast<int32_t>(l1_vec));
    Label skip = b.label();
    b.beq(cl, zero, skip);  // an empty chunk has no tile (and is neither sent nor received)
    b.tdesc(t, a, one, cl, JAL_DT_F32);
    b.bind(skip);
    b.free(a);
}

// Step i of the ring. Reduce-scatter: sends chunk s−i, receives chunk s−i−1 and adds it.
// All-gather (gather): sends chunk s+1−i (finished), receives chunk s−i in place.
void AllReduceKernel::ring_step(X i, bool gather)
{
    b.add(idx, s, n);
    if (gather) b.addi(idx, idx, 1);
    b.sub(idx, idx, i);
    chunk_tile(tsend, idx, cls);
    b.addi(idx, idx, -1);
    chunk_tile(tsum, idx, clr);
    Label no_send = b.label(), no_recv = b.label();
    b.beq(cls, zero, no_send);
    b.send(tsend, right, qs);
    b.bind(no_send);
    b.beq(clr, zero, no_recv);
    if (gather) {
        b.recv(tsum, left, qr);
        b.wait(qr, 1);
    } else {
        emit_tdesc_at(b, trecv, l1_tmp, one, clr, JAL_DT_F32);
        b.recv(trecv, left, qr);
        b.wait(qr, 1);
        b.vadd(tsum, tsum, trecv);
    }
    b.bind(no_recv);
    Label sent = b.label();
    b.beq(cls, zero, sent);
    b.wait(qs, 1);
    b.bind(sent);
}

// Elements [off, off + len) of every slice's vector: loaded, reduced, stored back.
void AllReduceKernel::segment(uint32_t off, uint32_t len)
{
    len_reg = emit_const(b, len);
    X addr = b.x();
    b.addi(addr, mine, 0);
    if (off) {
        X o = emit_const(b, int64_t{off} * 4);
        b.add(addr, addr, o);
        b.free(o);
    }
    X l1 = emit_const(b, l1_vec);
    b.tdesc(tvec, l1, one, len_reg, JAL_DT_F32);
    b.tload(tvec, addr, four, qio);
    b.wait(qio, 1);

    chunk = b.x();
    emit_share_chunk(b, chunk, len_reg, n);
    X last = b.x();
    b.addi(last, n, -1);
    idx = b.x(), cls = b.x(), clr = b.x();
    b.for_range(zero, last, 1, [&](X i) { ring_step(i, false); });
    b.for_range(zero, last, 1, [&](X i) { ring_step(i, true); });
    b.tstore(tvec, addr, four, qio);
    b.wait(qio, 1);
    b.free(idx), b.free(cls), b.free(clr), b.free(last), b.free(chunk);
    b.free(l1), b.free(addr), b.free(len_reg);
}

CodeObject AllReduceKernel::build()
{
    declare();
    for (uint32_t off = 0; off < c.length; off += seg_max)
        segment(off, std::min(seg_max, c.length - off));
    b.end();
    return b.finish();
}

}  // namespace

CodeObject build_all_reduce(const AllReduceConfig& c)
{
    require(c.length != 0, all_reduce_name(c), "empty vector");
    return AllReduceKernel(c).build();
}

}  // namespace jal::kernels::linear
