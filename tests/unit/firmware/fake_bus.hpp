// A fake management-core bus for firmware unit tests: a register map with scripted
// behaviour (OpenTitan style: expect a write, call the code, check). It models just enough
// of the chip: modelled time (each access costs JAL_MGMT_MMIO_NS), events and ticks, slices
// with fuses and self-test, an HBM PHY with hidden eyes, a power plant, and host functions
// with their admin registers and DMA-able memory.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "firmware/hal/native/native_bus.hpp"
#include "jal/hw/admin.h"
#include "jal/hw/chip.h"
#include "jal/hw/mgmt.h"

namespace fake {

struct Eye {
    int lo = 0, hi = -1;
};

struct LaneTruth {
    int rd_c = 30, rd_h = 8, wr_c = 30, wr_h = 8;
    bool dead = false;
};

struct ChannelTruth {
    int vref_opt = 15;
    int wrlvl_point = 20;
    std::array<LaneTruth, JAL_HBM_LANES> lanes{};
};

class FakePhy {
public:
    FakePhy();
    std::array<ChannelTruth, JAL_HBM_CHANNELS> truth{};
    bool flicker = true;  // taps one past an eye edge pass pseudo-randomly

    std::uint32_t read(std::uint32_t addr) const;
    // A command occupies its stack's engine until max(now, busy) + its cost; RESULT*/ERRORS
    // reads of the channel wait for that (ready_ns), as in the emulator.
    void write(std::uint32_t addr, std::uint32_t v, std::uint64_t now_ns);
    // A write of v to JAL_HBM_CMD: runs the command on the selected channel.
    void command(std::uint32_t v, std::uint64_t now_ns);
    std::uint64_t ready_ns(std::uint32_t addr) const;
    std::array<std::uint64_t, JAL_HBM_STACKS> busy_until_ns{};
    std::uint32_t commands = 0;  // commands issued

    struct State {
        std::array<std::uint8_t, JAL_HBM_LANES> rd{}, wr{};
        std::uint8_t vref = 0, wrlvl = 0;
        std::array<std::uint8_t, JAL_HBM_SPARE_LANES> remap{0xff, 0xff, 0xff, 0xff};
        bool enabled = false;
        std::uint32_t tests = 0;
        std::array<std::uint32_t, 3> result{};
        std::uint32_t errors = 0;
    };
    std::array<State, JAL_HBM_CHANNELS> state{};
    Eye read_eye(std::uint32_t ch, std::uint32_t lane, int vref) const;
    Eye write_eye(std::uint32_t ch, std::uint32_t lane, int vref) const;

private:
    bool pass(std::uint32_t ch, std::uint32_t lane, bool write) const;
    std::uint32_t ch_sel_ = 0, lane_sel_ = 0;
};

struct FakeSlices {
    std::uint64_t fused = 0, failing = 0, silent = 0;  // silent: never finish self-test
    std::uint64_t reset = 0, bist_started = 0, enable = 0, gate = 0, busy = 0;
    std::array<std::uint64_t, 64> bist_start_us{};
    std::uint32_t bist_us = JAL_SLICE_BIST_US;
    std::uint64_t done(std::uint64_t now_us) const;
};

// P = idle + dynamic * load * (f / fmax) * (V / Vmax)^2, recomputed on every read.
struct FakePower {
    double idle_w = 125, full_load_w = 900;  // full_load_w at max clock and voltage
    double load = 1.0;                       // fraction of full activity
    std::uint32_t clock_mhz = 1000, voltage_mv = 0;
    std::int32_t temp_mc = 50000;
    std::uint32_t timing_violations = 0;
    double current_scale = 1.0;  // lets a test push the core rail over its limit
    double power_w() const;
    double core_current_a() const;
};

struct HostFunction {
    bool present = false;
    std::uint64_t mem_base = 0x100000;
    std::vector<std::uint8_t> mem = std::vector<std::uint8_t>(1u << 20);
};

class FakeBus : public jal::fw::hal::NativeBus {
public:
    FakeBus();
    ~FakeBus() override;

    std::uint32_t read32(std::uint32_t addr) override;
    void write32(std::uint32_t addr, std::uint32_t value) override;
    void wait_for_event() override;
    std::uint32_t dma(std::uint32_t function, std::uint64_t host_addr, void* local,
                      std::uint32_t len, bool to_host) override;

    // Plain register storage for everything not modelled below.
    std::map<std::uint32_t, std::uint32_t> regs;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> writes;  // every write, in order
    std::vector<std::uint8_t> console;
    std::uint64_t now_ns = 0;
    std::uint32_t events = 0;
    std::uint32_t waits = 0;
    std::uint32_t reset_cause = JAL_RESET_CAUSE_POWER_ON, boot_count = 1, chip_index = 3,
                  wdt_resets = 0;

    FakeSlices slices;
    FakePhy phy;
    FakePower power;
    std::array<HostFunction, JAL_MGMT_MAX_FUNCS> fns{};
    std::uint32_t func_events = 0;
    std::vector<std::uint32_t> msis;
    bool log_writes = true;
    // Called for every access before the model; return true to override the result.
    std::function<bool(std::uint32_t addr, std::uint32_t& value)> read_hook;
    std::function<void(std::uint32_t addr, std::uint32_t value)> write_hook;

    std::uint64_t now_us() const { return now_ns / 1000; }
    std::uint32_t reg(std::uint32_t addr) const
    {
        auto it = regs.find(addr);
        return it == regs.end() ? 0 : it->second;
    }
    // Writes the firmware made to addr, in order.
    std::vector<std::uint32_t> writes_to(std::uint32_t addr) const;
    std::vector<std::string> console_lines() const;

    // Host side helpers.
    void attach(std::uint32_t fn);
    void detach(std::uint32_t fn);
    void host_write(std::uint32_t fn, std::uint32_t fn_off,
                    std::uint32_t value);  // bank register + news
    void* host_ptr(std::uint32_t fn, std::uint64_t addr)
    {
        return &fns[fn].mem[addr - fns[fn].mem_base];
    }

private:
    std::uint32_t now_hi_latch_ = 0;
};

}  // namespace fake
