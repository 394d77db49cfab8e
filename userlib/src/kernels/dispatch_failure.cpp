// The message of a failed dispatch: the report's fault, with the faulting instruction
// disassembled so the kernel author sees the line of their builder code.
#include <jal/kernels/dispatch.hpp>

#include <fmt/format.h>

#include <jal/isa/disasm.hpp>

namespace jal::kernels {

std::string dispatch_failure_message(std::string_view kernel, std::span<const uint64_t> code,
                                     const jal_dispatch_report& r)
{
    std::string msg = fmt::format("kernel {}: {}", kernel, jal_status_name(r.status));
    if (r.fault_slice == ~0u)
        return msg + " (before any slice ran: the code object or the dispatch was refused)";
    const char* mnemonic = isa::opcode_name(static_cast<uint8_t>(r.fault_opcode));
    msg += fmt::format(" in slice {} at pc {} (opcode {:#04x} {})", r.fault_slice, r.fault_pc,
                       r.fault_opcode, mnemonic ? mnemonic : "unknown");
    if (r.fault_pc < code.size())
        msg += ": " + isa::disassemble_instruction(code[r.fault_pc], r.fault_pc);
    if (r.fault_address) msg += fmt::format(" (address {:#x})", r.fault_address);
    return msg;
}

}  // namespace jal::kernels
