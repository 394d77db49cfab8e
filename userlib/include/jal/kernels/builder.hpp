// builder.hpp: emit tile-ISA kernels from C++ (docs/tile-isa.md, include/jal/hw/isa.h).
//
// A Builder is a small assembler with register allocation and labels: each method emits
// one instruction (or a short fixed sequence, like li() for a 64-bit constant), so what a
// kernel author writes maps line for line onto the disassembly. Slices are the unit of
// parallelism: a kernel reads its slice index (slice_index()) and the slice count, and
// decides which part of the work is its own; communication between slices is explicit
// (send/recv/barrier). finish() checks the program (every label bound, every branch in
// range, registers in range) and returns the code object bytes the device loads.
//
// Errors in the program being built (running out of registers, an unbound label, an
// immediate that does not fit) throw jal::Error with JAL_STATUS_INVALID_FIELD and a
// message that names the kernel and the instruction.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <jal/api.h>
#include <jal/hw/isa.h>
#include <jal/hw/status.h>

namespace jal::kernels {

struct X {  // a scalar register x0..x31 (x0 reads 0)
    uint8_t r = 0;
};
struct T {  // a tile register t0..t15
    uint8_t r = 0;
};
struct Q {  // a semaphore q0..q15
    uint8_t r = 0;
};
struct Label {
    uint32_t id = ~0u;
};

inline constexpr X zero{0};
// Instructions of a read-ahead slot (Builder::readahead_slot).
inline constexpr size_t kReadaheadSlotWords = 10;

// A finished kernel: the code object bytes (header, code, argument table, name).
struct CodeObject {
    std::string name;
    std::vector<uint8_t> bytes;
    uint32_t args_size = 0;
    uint32_t l1_bytes = 0;
    // Host-side hint (not in the bytes): the index of an argument whose value is a table of
    // u64, one a slice, whose entry SR_SLICE the kernel reads on its way to its first
    // streams (a shard table). link_stages reads that line in advance; -1: none.
    int32_t slice_table_arg = -1;
    // Host-side hint: the kernel receives what the stage before it computed as messages
    // (RECV) and reads nothing else that stage wrote, so link_stages starts it without the
    // barrier between stages (Stage::after_messages).
    bool after_messages = false;
    // With after_messages: every sender it receives from is named as a dispatch slice
    // (JAL_PEER_DISPATCH + d, ISA 1.3) or is its own slice, so on the whole dispatch it may
    // follow a stage on other slices (Stage::dispatch_senders).
    bool dispatch_senders = false;
    // Host-side hint: the first instruction of the kernel's read-ahead slot (Builder::
    // readahead_slot), where link_stages may put the next stage's argument and shard-table
    // reads instead of after the kernel's end; -1: none.
    int32_t readahead_slot = -1;
};

class JAL_API Builder {
public:
    explicit Builder(std::string name);

    // ---- registers (allocation is explicit; free what a loop no longer needs) ----
    X x();  // a free scalar register (x1..x31); throws when none is left
    T t();  // a free tile register
    Q q();  // a free semaphore
    void free(X r);
    void free(T r);
    void free(Q r);

    // ---- arguments: 8 bytes each, in declaration order; the returned register holds
    // the value (loaded from the argument buffer at the point of the call) ----
    X arg(std::string_view name, jal_code_arg_kind kind = JAL_ARG_U64);
    // A declared argument read again into a new register, for kernels that cannot hold it
    // in a register from the start.
    X arg_again(std::string_view name);
    uint32_t args_size() const;
    // Declares that argument `name` is a table the kernel reads at entry SR_SLICE
    // (CodeObject::slice_table_arg).
    void slice_table_hint(std::string_view name);
    // Declares CodeObject::after_messages.
    void after_messages_hint(bool dispatch_senders = false)
    {
        after_messages_ = true;
        dispatch_senders_ = dispatch_senders_ || dispatch_senders;
    }
    // A place where the scalar unit would wait anyway (right after a long load is issued,
    // before its WAIT): kReadaheadSlotWords instructions that jump over themselves, which
    // link_stages may fill with the next stage's argument-line and shard-table-line reads
    // (their misses then overlap this kernel's wait instead of following its end). Takes
    // two free registers for the slot's use only. At most one a kernel
    // (CodeObject::readahead_slot).
    void readahead_slot();

    // ---- L1: a bump allocator of tile memory; returns the L1 byte offset (64-byte
    // aligned). l1_bytes of the code object is the high-water mark. ----
    uint32_t l1_alloc(uint32_t bytes);
    void l1_reset(uint32_t offset);  // give back everything allocated at or after offset

    // ---- labels and control flow ----
    Label label();       // a new unbound label
    void bind(Label l);  // the next instruction is l's target
    void beq(X a, X b, Label l);
    void bne(X a, X b, Label l);
    void blt(X a, X b, Label l);
    void bge(X a, X b, Label l);
    void bltu(X a, X b, Label l);
    void jmp(Label l);
    // for (i = begin; i < end; i += step) body(i): emits the compare at the top, so an
    // empty range runs nothing. i is allocated and freed by the loop.
    void for_range(X begin, X end, int32_t step, const std::function<void(X i)>& body);
    void trap(jal_status status);
    void end();

    // ---- scalar ----
    void li(X d, int64_t value);  // LI, plus LUI when value does not fit 32 bits
    void movsr(X d, jal_special_reg sr);
    X slice_index();  // a new register holding JAL_SR_SLICE
    X slice_count();  // a new register holding JAL_SR_NSLICES
    void add(X d, X a, X b);
    void sub(X d, X a, X b);
    void mul(X d, X a, X b);
    void divu(X d, X a, X b);
    void remu(X d, X a, X b);
    void and_(X d, X a, X b);
    void or_(X d, X a, X b);
    void xor_(X d, X a, X b);
    void shl(X d, X a, X b);
    void shr(X d, X a, X b);
    void slt(X d, X a, X b);
    void sltu(X d, X a, X b);
    void min(X d, X a, X b);
    void max(X d, X a, X b);
    void addi(X d, X a, int32_t imm);
    void muli(X d, X a, int32_t imm);
    void mov(X d, X a) { addi(d, a, 0); }
    void ld(X d, X addr, int32_t offset = 0);
    void lw(X d, X addr, int32_t offset = 0);
    // PREFETCH (ISA 1.3): starts filling the scalar cache's line of addr + offset, no stall.
    void prefetch(X addr, int32_t offset = 0);
    void st(X value, X addr, int32_t offset = 0);

    // ---- tiles and DMA ----
    // stride_bytes 0: rows are packed (row bytes follow from cols and dtype)
    void tdesc(T t, X l1_addr, X rows, X cols, jal_dtype dtype, uint32_t stride_bytes = 0);
    // streamed (ISA 1.5): the memory does not change while the tile is in use (weights),
    // so the device may read it as late as each read of the tile (an MMA's b from HBM)
    void tload(T t, X addr, X row_stride, Q done, bool streamed = false);
    void tstore(T t, X addr, X row_stride, Q done);
    void tgather(T t, X table, X row_bytes, T indices, Q done, bool streamed = false);
    void wait(Q q, int32_t count = 1);
    void signal(Q q, int32_t count = 1);
    void tread(X d, T t, X row, int32_t col);
    void twrite(X value, T t, X row, int32_t col);

    // ---- matrix and vector ----
    // acc (F32 M x N) += a (M x K) x b^T (b: N rows of K), or with b_kmajor (ISA 1.4) x b
    // (b: K rows of N; F32, BF16 or F16)
    void mma(T acc, T a, T b, bool b_kmajor = false);
    void vadd(T d, T a, T b);
    void vsub(T d, T a, T b);
    void vmul(T d, T a, T b);
    void vmax(T d, T a, T b);
    void vmin(T d, T a, T b);
    void vfma(T d, T a, T b);
    void vscale(T d, T a, float s);
    void vadds(T d, T a, float s);
    void vexp(T d, T a);
    void vrsqrt(T d, T a);
    void vsilu(T d, T a);
    void vsigmoid(T d, T a);
    void vrecip(T d, T a);
    void vneg(T d, T a);
    void vclamp(T d, T a, X lo_f32_bits, X hi_f32_bits);
    void vredsum(T d, T a);
    void vredmax(T d, T a);
    void vargmax(T d, T a);
    void vtopk(T d, T a, uint32_t k);
    void vtopkv(T d, T a, uint32_t k);
    void vcvt(T d, T a, jal_cvt_mode mode = JAL_CVT_OCP);
    void vcopy(T d, T a);
    void vfill(T d, float value);
    void vfill_i32(T d, int32_t value);
    void vmask(T d, X query_pos, X key_pos, uint32_t window = 0);
    void viota(T d, X start, X step);

    // ---- slices ----
    void send(T t, X peer, Q done);
    void recv(T t, X peer, Q done);
    // All-gathers (ISA 1.6): t to, or a tile from, every slice of `group` (0: the stage's
    // slices in rank order; JAL_PEER_DISPATCH: the dispatch's), itself included; recv_all
    // places the tiles side by side along t's columns. `done` counts one for all of them.
    void send_all(T t, X group, Q done);
    void recv_all(T t, X group, Q done);
    // The same with the group `mask` a mask of dispatch slices (bit d: dispatch slice d; ISA
    // 1.7's JAL_GROUP_MASK), its members in dispatch order.
    void send_all_masked(T t, X mask, Q done);
    void recv_all_masked(T t, X mask, Q done);
    void barrier();
    // Everything before it reads only what no earlier kernel writes (arguments, weights,
    // tables): in a staged program (stages.hpp) it may run while the stage before is still
    // finishing, and the stage waits for that one here. A no-op in a dispatch of its own.
    void acquire();

    // ---- output ----
    void emit(uint64_t word);  // a raw instruction (tests of the validator use this)
    size_t size() const;       // instructions so far
    CodeObject finish();       // checks and encodes; the builder is spent afterwards

private:
    struct Fixup {
        size_t at;
        uint32_t label;
    };
    struct ArgEntry {
        std::string name;
        uint32_t offset;
        jal_code_arg_kind kind;
    };
    void op(jal_opcode o, unsigned a, unsigned b, unsigned c, unsigned d, int32_t imm);
    void branch(jal_opcode o, X a, X b, Label l);
    [[noreturn]] void fail(const std::string& what) const;

    std::string name_;
    std::vector<uint64_t> code_;
    std::vector<Fixup> fixups_;
    std::vector<int64_t> labels_;  // bound instruction index, or -1
    std::vector<ArgEntry> args_;
    uint32_t used_x_ = 1;  // bit r set: x(r) allocated; x0 is never free
    uint16_t used_t_ = 0;
    uint16_t used_q_ = 0;
    X args_base_{};  // holds JAL_SR_ARGS once the first argument is read
    uint32_t l1_top_ = 0;
    uint32_t l1_high_ = 0;
    int32_t slice_table_arg_ = -1;   // slice_table_hint
    bool after_messages_ = false;    // after_messages_hint
    bool dispatch_senders_ = false;  // after_messages_hint
    int32_t readahead_slot_ = -1;    // readahead_slot
    bool finished_ = false;
};

}  // namespace jal::kernels
