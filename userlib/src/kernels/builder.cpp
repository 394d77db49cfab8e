// The kernel builder (jal/kernels/builder.hpp): an assembler with register allocation,
// labels and an L1 bump allocator. Each call encodes one word and checks it with the
// ISA's validator at once, so a bad operand is reported at the line that wrote it.
#include <jal/kernels/builder.hpp>

#include <bit>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include <jal/error.hpp>
#include <jal/isa/code_object.hpp>
#include <jal/isa/disasm.hpp>

namespace jal::kernels {
namespace {

constexpr uint32_t kL1Align = 64;

int32_t f32_bits(float f)
{
    return std::bit_cast<int32_t>(f);
}

}  // namespace

Builder::Builder(std::string name) : name_(std::move(name))
{
    if (name_.empty() || name_.size() > isa::kMaxNameLength ||
        name_.find('\0') != std::string::npos)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("kernel name \"{}\" must be 1..{} characters without NUL", name_,
                                isa::kMaxNameLength));
}

void Builder::fail(const std::string& what) const
{
    throw Error(JAL_STATUS_INVALID_FIELD,
                fmt::format("kernel {}: instruction {}: {}", name_, code_.size(), what));
}

// ---- registers ----

X Builder::x()
{
    for (uint8_t r = 1; r < JAL_ISA_SCALAR_REGS; r++)
        if (!(used_x_ & (1u << r))) {
            used_x_ |= 1u << r;
            return X{r};
        }
    fail("out of scalar registers (x1..x31 are all allocated)");
}

T Builder::t()
{
    for (uint8_t r = 0; r < JAL_ISA_TILE_REGS; r++)
        if (!(used_t_ & (1u << r))) {
            used_t_ = static_cast<uint16_t>(used_t_ | (1u << r));
            return T{r};
        }
    fail("out of tile registers (t0..t15 are all allocated)");
}

Q Builder::q()
{
    for (uint8_t r = 0; r < JAL_ISA_SEMAPHORES; r++)
        if (!(used_q_ & (1u << r))) {
            used_q_ = static_cast<uint16_t>(used_q_ | (1u << r));
            return Q{r};
        }
    fail("out of semaphores (q0..q15 are all allocated)");
}

void Builder::free(X r)
{
    if (r.r == 0 || r.r >= JAL_ISA_SCALAR_REGS || !(used_x_ & (1u << r.r)))
        fail(fmt::format("free(x{}): not an allocated scalar register", r.r));
    if (args_base_.r != 0 && r.r == args_base_.r)
        fail(fmt::format("free(x{}): the builder keeps the argument base there", r.r));
    used_x_ &= ~(1u << r.r);
}

void Builder::free(T r)
{
    if (r.r >= JAL_ISA_TILE_REGS || !(used_t_ & (1u << r.r)))
        fail(fmt::format("free(t{}): not an allocated tile register", r.r));
    used_t_ = static_cast<uint16_t>(used_t_ & ~(1u << r.r));
}

void Builder::free(Q r)
{
    if (r.r >= JAL_ISA_SEMAPHORES || !(used_q_ & (1u << r.r)))
        fail(fmt::format("free(q{}): not an allocated semaphore", r.r));
    used_q_ = static_cast<uint16_t>(used_q_ & ~(1u << r.r));
}

// ---- arguments ----

X Builder::arg(std::string_view name, jal_code_arg_kind kind)
{
    if (name.empty() || name.size() > isa::kMaxArgNameLength ||
        name.find('\0') != std::string_view::npos)
        fail(fmt::format("argument name \"{}\" must be 1..{} characters without NUL", name,
                         isa::kMaxArgNameLength));
    if (kind < JAL_ARG_U64 || kind > JAL_ARG_F32)
        fail(fmt::format("argument {}: kind {} is not a jal_code_arg_kind", name,
                         static_cast<int>(kind)));
    if (args_.size() >= isa::kMaxArgs)
        fail(fmt::format("argument {}: a kernel has at most {} arguments", name, isa::kMaxArgs));
    for (const ArgEntry& a : args_)
        if (a.name == name) fail(fmt::format("argument {} is declared twice", name));
    if (args_base_.r == 0) {
        args_base_ = x();
        movsr(args_base_, JAL_SR_ARGS);
    }
    const uint32_t offset = static_cast<uint32_t>(args_.size() * 8);
    args_.push_back({std::string(name), offset, kind});
    X r = x();
    ld(r, args_base_, static_cast<int32_t>(offset));
    return r;
}

X Builder::arg_again(std::string_view name)
{
    for (const ArgEntry& a : args_)
        if (a.name == name) {
            X r = x();
            ld(r, args_base_, static_cast<int32_t>(a.offset));
            return r;
        }
    fail(fmt::format("argument {} is not declared", name));
}

void Builder::readahead_slot()
{
    if (readahead_slot_ >= 0) fail("a second read-ahead slot");
    readahead_slot_ = static_cast<int32_t>(code_.size());
    X regs[2] = {x(), x()};
    // The jump over the slot, then its registers named by two no-ops (writes of x0) and
    // no-ops to the slot's size: link_stages reads the registers from them.
    op(JAL_OP_JMP, 0, 0, 0, 0, static_cast<int32_t>(kReadaheadSlotWords));
    for (X r : regs) op(JAL_OP_ADDI, 0, r.r, 0, 0, 0);
    for (size_t i = 3; i < kReadaheadSlotWords; i++) op(JAL_OP_ADDI, 0, 0, 0, 0, 0);
    for (X r : regs) free(r);
}

void Builder::slice_table_hint(std::string_view name)
{
    for (const ArgEntry& a : args_)
        if (a.name == name) {
            slice_table_arg_ = static_cast<int32_t>(a.offset / 8);
            return;
        }
    fail(fmt::format("argument {} is not declared", name));
}

uint32_t Builder::args_size() const
{
    return static_cast<uint32_t>(args_.size() * 8);
}

// ---- L1 ----

uint32_t Builder::l1_alloc(uint32_t bytes)
{
    const uint64_t at = (uint64_t{l1_top_} + kL1Align - 1) / kL1Align * kL1Align;
    if (at + bytes > JAL_SLICE_L1_BYTES)
        fail(fmt::format("l1_alloc({}): only {} of the slice's {} bytes of L1 are left", bytes,
                         at >= JAL_SLICE_L1_BYTES ? 0 : JAL_SLICE_L1_BYTES - at,
                         JAL_SLICE_L1_BYTES));
    l1_top_ = static_cast<uint32_t>(at + bytes);
    l1_high_ = std::max(l1_high_, l1_top_);
    return static_cast<uint32_t>(at);
}

void Builder::l1_reset(uint32_t offset)
{
    if (offset > l1_top_)
        fail(fmt::format("l1_reset({}): beyond the allocated {} bytes", offset, l1_top_));
    l1_top_ = offset;
}

// ---- labels and control flow ----

Label Builder::label()
{
    labels_.push_back(-1);
    return Label{static_cast<uint32_t>(labels_.size() - 1)};
}

void Builder::bind(Label l)
{
    if (l.id >= labels_.size()) fail("bind: not a label of this kernel");
    if (labels_[l.id] >= 0)
        fail(fmt::format("bind: label {} is already bound to instruction {}", l.id, labels_[l.id]));
    labels_[l.id] = static_cast<int64_t>(code_.size());
}

void Builder::branch(jal_opcode o, X a, X b, Label l)
{
    if (l.id >= labels_.size())
        fail(fmt::format("{}: not a label of this kernel", isa::opcode_name(o)));
    fixups_.push_back({code_.size(), l.id});
    op(o, a.r, b.r, 0, 0, 0);
}

void Builder::beq(X a, X b, Label l)
{
    branch(JAL_OP_BEQ, a, b, l);
}
void Builder::bne(X a, X b, Label l)
{
    branch(JAL_OP_BNE, a, b, l);
}
void Builder::blt(X a, X b, Label l)
{
    branch(JAL_OP_BLT, a, b, l);
}
void Builder::bge(X a, X b, Label l)
{
    branch(JAL_OP_BGE, a, b, l);
}
void Builder::bltu(X a, X b, Label l)
{
    branch(JAL_OP_BLTU, a, b, l);
}
void Builder::jmp(Label l)
{
    branch(JAL_OP_JMP, zero, zero, l);
}

void Builder::for_range(X begin, X end, int32_t step, const std::function<void(X i)>& body)
{
    if (step == 0) fail("for_range: step 0 never ends");
    X i = this->x();
    Label top = label(), done = label();
    mov(i, begin);
    bind(top);
    if (step > 0)
        bge(i, end, done);  // leave when i >= end
    else
        bge(end, i, done);  // counting down: leave when i <= end
    body(i);
    addi(i, i, step);
    jmp(top);
    bind(done);
    free(i);
}

void Builder::trap(jal_status status)
{
    op(JAL_OP_TRAP, 0, 0, 0, 0, static_cast<int32_t>(status));
}
void Builder::end()
{
    op(JAL_OP_END, 0, 0, 0, 0, 0);
}

// ---- scalar ----

void Builder::li(X d, int64_t value)
{
    const auto low = static_cast<int32_t>(static_cast<uint32_t>(value));
    op(JAL_OP_LI, d.r, 0, 0, 0, low);
    if (value != low)  // LUI replaces the upper word of the sign-extended low one
        op(JAL_OP_LUI, d.r, 0, 0, 0,
           static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(value) >> 32)));
}

void Builder::movsr(X d, jal_special_reg sr)
{
    op(JAL_OP_MOVSR, d.r, 0, 0, 0, static_cast<int32_t>(sr));
}

X Builder::slice_index()
{
    X r = x();
    movsr(r, JAL_SR_SLICE);
    return r;
}

X Builder::slice_count()
{
    X r = x();
    movsr(r, JAL_SR_NSLICES);
    return r;
}

void Builder::add(X d, X a, X b)
{
    op(JAL_OP_ADD, d.r, a.r, b.r, 0, 0);
}
void Builder::sub(X d, X a, X b)
{
    op(JAL_OP_SUB, d.r, a.r, b.r, 0, 0);
}
void Builder::mul(X d, X a, X b)
{
    op(JAL_OP_MUL, d.r, a.r, b.r, 0, 0);
}
void Builder::divu(X d, X a, X b)
{
    op(JAL_OP_DIVU, d.r, a.r, b.r, 0, 0);
}
void Builder::remu(X d, X a, X b)
{
    op(JAL_OP_REMU, d.r, a.r, b.r, 0, 0);
}
void Builder::and_(X d, X a, X b)
{
    op(JAL_OP_AND, d.r, a.r, b.r, 0, 0);
}
void Builder::or_(X d, X a, X b)
{
    op(JAL_OP_OR, d.r, a.r, b.r, 0, 0);
}
void Builder::xor_(X d, X a, X b)
{
    op(JAL_OP_XOR, d.r, a.r, b.r, 0, 0);
}
void Builder::shl(X d, X a, X b)
{
    op(JAL_OP_SHL, d.r, a.r, b.r, 0, 0);
}
void Builder::shr(X d, X a, X b)
{
    op(JAL_OP_SHR, d.r, a.r, b.r, 0, 0);
}
void Builder::slt(X d, X a, X b)
{
    op(JAL_OP_SLT, d.r, a.r, b.r, 0, 0);
}
void Builder::sltu(X d, X a, X b)
{
    op(JAL_OP_SLTU, d.r, a.r, b.r, 0, 0);
}
void Builder::min(X d, X a, X b)
{
    op(JAL_OP_MIN, d.r, a.r, b.r, 0, 0);
}
void Builder::max(X d, X a, X b)
{
    op(JAL_OP_MAX, d.r, a.r, b.r, 0, 0);
}
void Builder::addi(X d, X a, int32_t imm)
{
    op(JAL_OP_ADDI, d.r, a.r, 0, 0, imm);
}
void Builder::muli(X d, X a, int32_t imm)
{
    op(JAL_OP_MULI, d.r, a.r, 0, 0, imm);
}
void Builder::ld(X d, X addr, int32_t offset)
{
    op(JAL_OP_LD, d.r, addr.r, 0, 0, offset);
}
void Builder::prefetch(X addr, int32_t offset)
{
    op(JAL_OP_PREFETCH, 0, addr.r, 0, 0, offset);
}
void Builder::lw(X d, X addr, int32_t offset)
{
    op(JAL_OP_LW, d.r, addr.r, 0, 0, offset);
}
void Builder::st(X value, X addr, int32_t offset)
{
    op(JAL_OP_ST, value.r, addr.r, 0, 0, offset);
}

// ---- tiles and DMA ----

void Builder::tdesc(T t, X l1_addr, X rows, X cols, jal_dtype dtype, uint32_t stride_bytes)
{
    if (stride_bytes > (0xffffffffu >> 4))
        fail(fmt::format("tdesc: stride {} does not fit 28 bits", stride_bytes));
    op(JAL_OP_TDESC, t.r, l1_addr.r, rows.r, cols.r, JAL_TDESC_IMM(stride_bytes, dtype));
}

void Builder::tload(T t, X addr, X row_stride, Q done, bool streamed)
{
    op(JAL_OP_TLOAD, t.r, addr.r, row_stride.r, 0,
       static_cast<int32_t>(done.r | (streamed ? JAL_DMA_STREAMED : 0)));
}
void Builder::tstore(T t, X addr, X row_stride, Q done)
{
    op(JAL_OP_TSTORE, t.r, addr.r, row_stride.r, 0, done.r);
}
void Builder::tgather(T t, X table, X row_bytes, T indices, Q done, bool streamed)
{
    op(JAL_OP_TGATHER, t.r, table.r, row_bytes.r, indices.r,
       static_cast<int32_t>(done.r | (streamed ? JAL_DMA_STREAMED : 0)));
}
void Builder::wait(Q q, int32_t count)
{
    op(JAL_OP_WAIT, q.r, 0, 0, 0, count);
}
void Builder::signal(Q q, int32_t count)
{
    op(JAL_OP_SIGNAL, q.r, 0, 0, 0, count);
}
void Builder::tread(X d, T t, X row, int32_t col)
{
    op(JAL_OP_TREAD, d.r, t.r, row.r, 0, col);
}
void Builder::twrite(X value, T t, X row, int32_t col)
{
    op(JAL_OP_TWRITE, value.r, t.r, row.r, 0, col);
}

// ---- matrix and vector ----

void Builder::mma(T acc, T a, T b, bool b_kmajor)
{
    op(JAL_OP_MMA, acc.r, a.r, b.r, 0, b_kmajor ? JAL_MMA_B_KMAJOR : 0);
}
void Builder::vadd(T d, T a, T b)
{
    op(JAL_OP_VADD, d.r, a.r, b.r, 0, 0);
}
void Builder::vsub(T d, T a, T b)
{
    op(JAL_OP_VSUB, d.r, a.r, b.r, 0, 0);
}
void Builder::vmul(T d, T a, T b)
{
    op(JAL_OP_VMUL, d.r, a.r, b.r, 0, 0);
}
void Builder::vmax(T d, T a, T b)
{
    op(JAL_OP_VMAX, d.r, a.r, b.r, 0, 0);
}
void Builder::vmin(T d, T a, T b)
{
    op(JAL_OP_VMIN, d.r, a.r, b.r, 0, 0);
}
void Builder::vfma(T d, T a, T b)
{
    op(JAL_OP_VFMA, d.r, a.r, b.r, 0, 0);
}
void Builder::vscale(T d, T a, float s)
{
    op(JAL_OP_VSCALE, d.r, a.r, 0, 0, f32_bits(s));
}
void Builder::vadds(T d, T a, float s)
{
    op(JAL_OP_VADDS, d.r, a.r, 0, 0, f32_bits(s));
}
void Builder::vexp(T d, T a)
{
    op(JAL_OP_VEXP, d.r, a.r, 0, 0, 0);
}
void Builder::vrsqrt(T d, T a)
{
    op(JAL_OP_VRSQRT, d.r, a.r, 0, 0, 0);
}
void Builder::vsilu(T d, T a)
{
    op(JAL_OP_VSILU, d.r, a.r, 0, 0, 0);
}
void Builder::vsigmoid(T d, T a)
{
    op(JAL_OP_VSIGMOID, d.r, a.r, 0, 0, 0);
}
void Builder::vrecip(T d, T a)
{
    op(JAL_OP_VRECIP, d.r, a.r, 0, 0, 0);
}
void Builder::vneg(T d, T a)
{
    op(JAL_OP_VNEG, d.r, a.r, 0, 0, 0);
}
void Builder::vclamp(T d, T a, X lo_f32_bits, X hi_f32_bits)
{
    op(JAL_OP_VCLAMP, d.r, a.r, lo_f32_bits.r, hi_f32_bits.r, 0);
}
void Builder::vredsum(T d, T a)
{
    op(JAL_OP_VREDSUM, d.r, a.r, 0, 0, 0);
}
void Builder::vredmax(T d, T a)
{
    op(JAL_OP_VREDMAX, d.r, a.r, 0, 0, 0);
}
void Builder::vargmax(T d, T a)
{
    op(JAL_OP_VARGMAX, d.r, a.r, 0, 0, 0);
}

void Builder::vtopk(T d, T a, uint32_t k)
{
    if (k < 1 || k > static_cast<uint32_t>(std::numeric_limits<int32_t>::max()))
        fail(fmt::format("vtopk: k {} is out of range (at least 1)", k));
    op(JAL_OP_VTOPK, d.r, a.r, 0, 0, static_cast<int32_t>(k));
}

void Builder::vtopkv(T d, T a, uint32_t k)
{
    if (k < 1 || k > static_cast<uint32_t>(std::numeric_limits<int32_t>::max()))
        fail(fmt::format("vtopkv: k {} is out of range (at least 1)", k));
    op(JAL_OP_VTOPKV, d.r, a.r, 0, 0, static_cast<int32_t>(k));
}

void Builder::vcvt(T d, T a, jal_cvt_mode mode)
{
    op(JAL_OP_VCVT, d.r, a.r, 0, 0, static_cast<int32_t>(mode));
}
void Builder::vcopy(T d, T a)
{
    op(JAL_OP_VCOPY, d.r, a.r, 0, 0, 0);
}
void Builder::vfill(T d, float value)
{
    op(JAL_OP_VFILL, d.r, 0, 0, 0, f32_bits(value));
}
void Builder::vfill_i32(T d, int32_t value)
{
    op(JAL_OP_VFILL, d.r, 0, 0, 0, value);
}

void Builder::vmask(T d, X query_pos, X key_pos, uint32_t window)
{
    if (window > static_cast<uint32_t>(std::numeric_limits<int32_t>::max()))
        fail(fmt::format("vmask: window {} does not fit the immediate", window));
    op(JAL_OP_VMASK, d.r, query_pos.r, key_pos.r, 0, static_cast<int32_t>(window));
}

void Builder::viota(T d, X start, X step)
{
    op(JAL_OP_VIOTA, d.r, start.r, step.r, 0, 0);
}

// ---- slices ----

void Builder::send(T t, X peer, Q done)
{
    op(JAL_OP_SEND, t.r, peer.r, 0, 0, done.r);
}
void Builder::recv(T t, X peer, Q done)
{
    op(JAL_OP_RECV, t.r, peer.r, 0, 0, done.r);
}
void Builder::send_all(T t, X group, Q done)
{
    op(JAL_OP_SENDALL, t.r, group.r, 0, 0, done.r);
}
void Builder::recv_all(T t, X group, Q done)
{
    op(JAL_OP_RECVALL, t.r, group.r, 0, 0, done.r);
}
void Builder::send_all_masked(T t, X mask, Q done)
{
    op(JAL_OP_SENDALL, t.r, mask.r, 0, 0, static_cast<int32_t>(done.r | JAL_GROUP_MASK));
}
void Builder::recv_all_masked(T t, X mask, Q done)
{
    op(JAL_OP_RECVALL, t.r, mask.r, 0, 0, static_cast<int32_t>(done.r | JAL_GROUP_MASK));
}
void Builder::barrier()
{
    op(JAL_OP_BARRIER, 0, 0, 0, 0, 0);
}
void Builder::acquire()
{
    op(JAL_OP_ACQUIRE, 0, 0, 0, 0, 0);
}

// ---- output ----

void Builder::emit(uint64_t word)
{
    if (finished_) fail("the kernel was already finished");
    code_.push_back(word);
}

size_t Builder::size() const
{
    return code_.size();
}

void Builder::op(jal_opcode o, unsigned a, unsigned b, unsigned c, unsigned d, int32_t imm)
{
    if (finished_) fail("the kernel was already finished");
    const char* name = isa::opcode_name(static_cast<uint8_t>(o));
    if (a > 0x3f || b > 0x3f || c > 0x3f || d > 0x3f)
        fail(fmt::format("{}: register number {} does not fit a field", name ? name : "?",
                         std::max({a, b, c, d})));
    const uint64_t word = JAL_INSN(o, a, b, c, d, imm);
    std::string why;
    if (isa::validate_instruction(word, &why) != JAL_STATUS_OK) fail(why);
    code_.push_back(word);
}

CodeObject Builder::finish()
{
    if (finished_) fail("the kernel was already finished");
    for (size_t id = 0; id < labels_.size(); id++)
        if (labels_[id] < 0) fail(fmt::format("label {} is never bound", id));
    // A program that does not end with END would run off its end: close it.
    if (code_.empty() || JAL_INSN_OPCODE(code_.back()) != JAL_OP_END) end();
    for (const Fixup& f : fixups_) {
        const int64_t offset = labels_[f.label] - static_cast<int64_t>(f.at);
        code_[f.at] = (code_[f.at] & ~uint64_t{0xffffffff}) |
                      static_cast<uint32_t>(static_cast<int32_t>(offset));
    }
    std::vector<jal_code_arg> table(args_.size());
    for (size_t i = 0; i < args_.size(); i++) {
        jal_code_arg& t = table[i];
        std::memset(&t, 0, sizeof t);
        std::memcpy(t.name, args_[i].name.data(), args_[i].name.size());
        t.offset = args_[i].offset;
        t.kind = args_[i].kind;
    }
    CodeObject out;
    out.name = name_;
    out.args_size = args_size();
    out.l1_bytes = l1_high_;
    out.slice_table_arg = slice_table_arg_;
    out.after_messages = after_messages_;
    out.dispatch_senders = dispatch_senders_;
    out.readahead_slot = readahead_slot_;
    out.bytes = isa::encode_code_object(name_, code_, out.args_size, out.l1_bytes, table);
    if (out.bytes.size() > JAL_CODE_MAX_BYTES)
        fail(fmt::format("the code object is {} bytes, more than the maximum {}", out.bytes.size(),
                         JAL_CODE_MAX_BYTES));
    finished_ = true;
    return out;
}

}  // namespace jal::kernels
