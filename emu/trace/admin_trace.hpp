// jal-emu --trace: the admin queue's commands as spans on the `admin` track of a chip's
// wall-clock process (docs/emulator.md, "Traces"). A span runs from the firmware fetching
// the command from the host's submission ring to its completion entry becoming visible to
// the host; the emulator sees both as the firmware's DMA (HostInterface::on_admin_*).
#pragma once

#include "emu/trace/trace_writer.hpp"
#include "jal/hw/admin.h"
#include "jal/hw/mgmt.h"

#include <array>
#include <cstdint>
#include <mutex>
#include <string>

namespace jal::emu {

class AdminTrace {
public:
    explicit AdminTrace(const ChipTrace& trace) : trace_(trace) {}

    void fetched(std::uint32_t fn, const jal_admin_sqe& sqe);
    void completed(std::uint32_t fn, const jal_admin_cqe& cqe);

    // "IDENTIFY", "GET_LOG", ... or "opcode 0x42" for opcodes the headers do not define.
    static std::string opcode_name(std::uint8_t opcode);

private:
    // The firmware runs one command of a function at a time: fetch, execute, complete.
    struct Pending {
        bool valid = false;
        std::uint8_t opcode = 0;
        std::uint16_t cid = 0;
        std::uint32_t data_len = 0;
        double t0 = 0;
    };
    void emit(std::uint32_t fn, const Pending& p, nlohmann::json outcome);

    const ChipTrace& trace_;
    std::mutex m_;
    std::array<Pending, JAL_MGMT_MAX_FUNCS> pending_{};
};

}  // namespace jal::emu
