// Runs hand-assembled tile-ISA programs on the emulator's executor and scheduler without a
// chip: an HBM, an MMU with context 1 mapped page by page onto chosen slices, a worker pool
// of a chosen size. Programs are written with JAL_INSN (isa.h) through the short helpers
// below.
#pragma once

#include "emu/chip/hbm_memory.hpp"
#include "emu/chip/mmu.hpp"
#include "emu/tile_exec/device_memory.hpp"
#include "emu/tile_exec/dispatch.hpp"
#include "jal/hw/chip.h"
#include "jal/hw/isa.h"
#include "jal/hw/status.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <vector>

namespace isatest {

constexpr std::uint32_t kCtx = 1;
constexpr std::uint64_t kPage = JAL_PAGE_SIZE;
constexpr std::uint64_t kVa = JAL_VA_BASE;

// ---- assembler helpers: one per operand shape ----
inline std::uint64_t I(std::uint8_t op, unsigned a = 0, unsigned b = 0, unsigned c = 0,
                       unsigned d = 0, std::int32_t imm = 0)
{
    return JAL_INSN(op, a, b, c, d, imm);
}
inline std::uint64_t LI(unsigned rd, std::int32_t v)
{
    return I(JAL_OP_LI, rd, 0, 0, 0, v);
}
inline std::uint64_t LUI(unsigned rd, std::int32_t v)
{
    return I(JAL_OP_LUI, rd, 0, 0, 0, v);
}
inline std::uint64_t R(std::uint8_t op, unsigned rd, unsigned ra, unsigned rb)
{
    return I(op, rd, ra, rb);
}
inline std::uint64_t ADDI(unsigned rd, unsigned ra, std::int32_t v)
{
    return I(JAL_OP_ADDI, rd, ra, 0, 0, v);
}
inline std::uint64_t MULI(unsigned rd, unsigned ra, std::int32_t v)
{
    return I(JAL_OP_MULI, rd, ra, 0, 0, v);
}
inline std::uint64_t MOVSR(unsigned rd, std::int32_t sr)
{
    return I(JAL_OP_MOVSR, rd, 0, 0, 0, sr);
}
inline std::uint64_t LD(unsigned rd, unsigned ra, std::int32_t off = 0)
{
    return I(JAL_OP_LD, rd, ra, 0, 0, off);
}
inline std::uint64_t LW(unsigned rd, unsigned ra, std::int32_t off = 0)
{
    return I(JAL_OP_LW, rd, ra, 0, 0, off);
}
inline std::uint64_t ST(unsigned rs, unsigned ra, std::int32_t off = 0)
{
    return I(JAL_OP_ST, rs, ra, 0, 0, off);
}
inline std::uint64_t BR(std::uint8_t op, unsigned ra, unsigned rb, std::int32_t off)
{
    return I(op, ra, rb, 0, 0, off);
}
inline std::uint64_t JMP(std::int32_t off)
{
    return I(JAL_OP_JMP, 0, 0, 0, 0, off);
}
inline std::uint64_t TDESC(unsigned t, unsigned raddr, unsigned rrows, unsigned rcols,
                           std::uint32_t stride, std::uint32_t dt)
{
    return I(JAL_OP_TDESC, t, raddr, rrows, rcols, JAL_TDESC_IMM(stride, dt));
}
inline std::uint64_t TLOAD(unsigned t, unsigned raddr, unsigned rstride, unsigned q)
{
    return I(JAL_OP_TLOAD, t, raddr, rstride, 0, static_cast<std::int32_t>(q));
}
inline std::uint64_t TSTORE(unsigned t, unsigned raddr, unsigned rstride, unsigned q)
{
    return I(JAL_OP_TSTORE, t, raddr, rstride, 0, static_cast<std::int32_t>(q));
}
inline std::uint64_t WAIT(unsigned q, std::int32_t n)
{
    return I(JAL_OP_WAIT, q, 0, 0, 0, n);
}
inline std::uint64_t MMA(unsigned acc, unsigned a, unsigned b, std::int32_t layout = 0)
{
    return I(JAL_OP_MMA, acc, a, b, 0, layout);
}
inline std::uint64_t V(std::uint8_t op, unsigned td, unsigned ta = 0, unsigned tb = 0,
                       unsigned d = 0, std::int32_t imm = 0)
{
    return I(op, td, ta, tb, d, imm);
}
inline std::uint64_t SEND(unsigned t, unsigned rto, unsigned q)
{
    return I(JAL_OP_SEND, t, rto, 0, 0, static_cast<std::int32_t>(q));
}
inline std::uint64_t RECV(unsigned t, unsigned rfrom, unsigned q)
{
    return I(JAL_OP_RECV, t, rfrom, 0, 0, static_cast<std::int32_t>(q));
}
inline std::uint64_t BARRIER()
{
    return I(JAL_OP_BARRIER);
}
inline std::uint64_t END()
{
    return I(JAL_OP_END);
}
inline std::int32_t f32imm(float f)
{
    std::int32_t v;
    std::memcpy(&v, &f, 4);
    return v;
}

// n floats uniform in [-3, 3) from `seed`: matrix and vector operands.
inline std::vector<float> random_floats(std::size_t n, unsigned seed)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> d(-3, 3);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

class IsaTest : public ::testing::Test {
protected:
    IsaTest() : mem_(hbm_, mmu_, kCtx) {}

    // Maps `pages` 2 MiB pages at kVa + first_page*kPage onto physical slice `slice`.
    void map(std::uint32_t first_page, std::uint32_t pages, std::uint32_t slice)
    {
        for (std::uint32_t p = 0; p < pages; ++p)
            ASSERT_EQ(mmu_.map(kCtx, kVa + (first_page + p) * kPage,
                               slice * JAL_HBM_SLICE_BYTES + (next_pa_[slice]++) * kPage, false),
                      JAL_STATUS_OK);
    }
    void write(std::uint64_t va, const void* src, std::uint64_t n)
    {
        jal::emu::exec::Traffic t;
        std::uint64_t f;
        ASSERT_EQ(mem_.write(va, src, n, 0, t, f), JAL_STATUS_OK);
    }
    void read(std::uint64_t va, void* dst, std::uint64_t n)
    {
        jal::emu::exec::Traffic t;
        std::uint64_t f;
        ASSERT_EQ(mem_.read(va, dst, n, 0, t, f), JAL_STATUS_OK);
    }
    template <typename T>
    std::vector<T> read_vec(std::uint64_t va, std::size_t n)
    {
        std::vector<T> v(n);
        read(va, v.data(), n * sizeof(T));
        return v;
    }
    template <typename T>
    void write_vec(std::uint64_t va, const std::vector<T>& v)
    {
        write(va, v.data(), v.size() * sizeof(T));
    }

    struct Opts {
        std::uint32_t slices = 1;
        std::uint32_t first_physical = 0;  // dispatch slice i runs on physical slice first + i
        std::uint64_t args = 0;
        std::uint64_t budget = 1'000'000;
        bool timing_only = false;
        std::uint32_t clock_mhz = 2000;
        unsigned threads = 2;
        std::uint32_t l1_bytes = JAL_SLICE_L1_BYTES;
    };
    jal::emu::exec::DispatchResult run(const std::vector<std::uint64_t>& code, const Opts& o)
    {
        prog_ = jal::emu::exec::Program::from_words(code, o.l1_bytes);
        jal::emu::exec::DispatchSetup s;
        s.params.program = &prog_;
        s.params.memory = &mem_;
        s.params.args = o.args;
        s.params.budget = o.budget;
        s.params.timing_only = o.timing_only;
        for (std::uint32_t i = 0; i < o.slices; ++i) s.slices.push_back({i, o.first_physical + i});
        s.clock_mhz = o.clock_mhz;
        s.voltage_mv = 900;
        if (!pool_ || pool_->size() != o.threads)
            pool_ = std::make_unique<jal::emu::exec::WorkerPool>(o.threads);
        return jal::emu::exec::run_dispatch(s, bank_, *pool_);
    }
    jal::emu::exec::DispatchResult run(const std::vector<std::uint64_t>& code)
    {
        return run(code, Opts{});
    }

    jal::emu::HbmMemory hbm_;
    jal::emu::Mmu mmu_;
    jal::emu::exec::DeviceMemory mem_;
    jal::emu::exec::SliceBank bank_;
    std::unique_ptr<jal::emu::exec::WorkerPool> pool_;
    jal::emu::exec::Program prog_;
    std::uint32_t next_pa_[JAL_NUM_SLICES] = {};
};

}  // namespace isatest
