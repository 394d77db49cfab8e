// row_blocks.cpp: slice row ranges and block loops shared by the transformer kernels.
#include "row_blocks.hpp"

#include <algorithm>
#include <cstring>

#include <jal/error.hpp>

namespace jal::kernels::transformer_detail {

RowRange slice_rows(Builder& b, X rows)
{
    X s = b.slice_index();
    X n = b.slice_count();
    X per = b.x();
    // per = ceil(rows / n): every slice but the last gets the same count.
    b.add(per, rows, n);
    b.addi(per, per, -1);
    b.divu(per, per, n);
    X begin = b.x();
    X end = b.x();
    b.mul(begin, s, per);
    b.min(begin, begin, rows);
    b.add(end, begin, per);
    b.min(end, end, rows);
    b.free(per);
    b.free(n);
    b.free(s);
    return {begin, end};
}

void for_blocks(Builder& b, X begin, X end, uint32_t block,
                const std::function<void(X row0, X n)>& body)
{
    X step = constant(b, block);
    b.for_range(begin, end, static_cast<int32_t>(block), [&](X row0) {
        X n = b.x();
        b.sub(n, end, row0);
        b.min(n, n, step);
        body(row0, n);
        b.free(n);
    });
    b.free(step);
}

void for_slice_blocks(Builder& b, X rows, uint32_t block,
                      const std::function<void(X row0, X n)>& body)
{
    RowRange range = slice_rows(b, rows);
    for_blocks(b, range.begin, range.end, block, body);
    b.free(range.end);
    b.free(range.begin);
}

void row_address(Builder& b, X addr, X row0, X base, X stride)
{
    b.mul(addr, row0, stride);
    b.add(addr, addr, base);
}

void load_rows(Builder& b, T t, X addr, X row0, X base, X stride, Q q)
{
    row_address(b, addr, row0, base, stride);
    b.tload(t, addr, stride, q);
    b.wait(q);
}

void store_rows(Builder& b, T t, X addr, X row0, X base, X stride, Q q)
{
    row_address(b, addr, row0, base, stride);
    b.tstore(t, addr, stride, q);
    b.wait(q);
}

void trap_unless_within(Builder& b, X first, X count, uint32_t limit)
{
    X end = b.x();
    X lim = constant(b, limit);
    Label ok = b.label();
    b.add(end, first, count);
    b.sltu(end, lim, end);
    b.beq(end, zero, ok);
    b.trap(JAL_STATUS_OUT_OF_RANGE);
    b.bind(ok);
    b.free(lim);
    b.free(end);
}

void for_strided(Builder& b, X first, X end, X step, const std::function<void(X i)>& body)
{
    X i = b.x();
    Label top = b.label(), done = b.label();
    b.mov(i, first);
    b.bind(top);
    b.bge(i, end, done);
    body(i);
    b.add(i, i, step);
    b.jmp(top);
    b.bind(done);
    b.free(i);
}

X constant(Builder& b, int64_t value)
{
    X r = b.x();
    b.li(r, value);
    return r;
}

void scaled_add(Builder& b, X d, X base, X index, int64_t scale)
{
    X t = b.x();
    b.li(t, scale);
    b.mul(t, index, t);
    b.add(d, base, t);
    b.free(t);
}

uint32_t rows_that_fit(uint64_t bytes_per_row, uint64_t budget, uint32_t max_rows)
{
    uint64_t n = bytes_per_row ? budget / bytes_per_row : max_rows;
    return static_cast<uint32_t>(std::clamp<uint64_t>(n, 1, max_rows));
}

int64_t f32_bits(float value)
{
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    return static_cast<int64_t>(bits);
}

void require(bool ok, const std::string& kernel, const std::string& what)
{
    if (!ok) throw Error(JAL_STATUS_INVALID_FIELD, kernel + ": " + what);
}

void require_cols(uint32_t cols, const std::string& kernel)
{
    require(cols > 0, kernel, "cols must be positive");
}

}  // namespace jal::kernels::transformer_detail
