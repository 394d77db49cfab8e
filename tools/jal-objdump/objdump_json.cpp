#include "objdump_json.hpp"

#include <fmt/format.h>

#include <jal/hw/status.h>
#include <jal/isa/code_object.hpp>
#include <jal/isa/disasm.hpp>

namespace jal::objdump {
namespace {

const char* kind_name(uint32_t kind)
{
    switch (kind) {
    case JAL_ARG_U64:
        return "u64";
    case JAL_ARG_ADDRESS:
        return "address";
    case JAL_ARG_F32:
        return "f32";
    default:
        return "unknown";
    }
}

}  // namespace

nlohmann::json code_object_json(std::span<const uint8_t> bytes)
{
    nlohmann::json j;
    std::string error;
    jal_status st = isa::validate_code_object(bytes, &error);
    j["valid"] = st == JAL_STATUS_OK;
    if (st != JAL_STATUS_OK) {
        j["status"] = jal_status_name(st);
        j["error"] = error;
    }
    const isa::CodeObjectView v = isa::read_code_object_unchecked(bytes);
    const jal_code_object_header& h = v.header;
    j["name"] = v.name;
    j["header"] = {
        {"magic", fmt::format("{:#010x}", h.magic)},
        {"isa_major", h.isa_major},
        {"isa_minor", h.isa_minor},
        {"header_size", h.header_size},
        {"total_size", h.total_size},
        {"code_offset", h.code_offset},
        {"code_words", h.code_words},
        {"name_offset", h.name_offset},
        {"args_size", h.args_size},
        {"l1_bytes", h.l1_bytes},
        {"flags", h.flags},
        {"code_crc32", fmt::format("{:#010x}", h.code_crc32)},
        {"args_table_offset", h.args_table_offset},
        {"args_table_count", h.args_table_count},
    };
    j["args"] = nlohmann::json::array();
    for (const jal_code_arg& a : v.args)
        j["args"].push_back({{"name", a.name}, {"offset", a.offset}, {"kind", kind_name(a.kind)}});
    j["instructions"] = nlohmann::json::array();
    for (size_t pc = 0; pc < v.code.size(); pc++) {
        const uint64_t w = v.code[pc];
        const char* mnemonic = isa::opcode_name(JAL_INSN_OPCODE(w));
        std::string why;
        nlohmann::json insn = {
            {"pc", pc},
            {"word", fmt::format("{:#018x}", w)},
            {"opcode", JAL_INSN_OPCODE(w)},
            {"mnemonic", mnemonic ? mnemonic : nullptr},
            {"text", isa::disassemble_instruction(w, static_cast<uint32_t>(pc))},
        };
        if (isa::validate_instruction(w, &why) != JAL_STATUS_OK) insn["error"] = why;
        j["instructions"].push_back(std::move(insn));
    }
    return j;
}

}  // namespace jal::objdump
