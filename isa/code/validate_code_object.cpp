// A whole code object, as the device checks it before any slice runs: header fields,
// section bounds, the CRC, the name, the argument table, every instruction and every
// branch target. Checks run in layout order so the first message names the first thing
// wrong, and nothing is read before its bounds are known.
#include <jal/isa/code_object.hpp>

#include <algorithm>
#include <bit>
#include <cstring>

#include <fmt/format.h>

#include "opcode_table.hpp"

namespace jal::isa {
namespace {

static_assert(std::endian::native == std::endian::little,
              "code objects are little-endian; so is the host");

jal_status reject(std::string* error, jal_status status, std::string message)
{
    if (error) *error = std::move(message);
    return status;
}

struct Section {
    const char* what;
    uint64_t begin;
    uint64_t end;
};

// Where the sections end, once their bounds are checked.
struct Layout {
    uint64_t code_end = 0;
    uint64_t args_end = 0;
    uint64_t name_end = 0;
};

// Header fields that need nothing but the header and the object's size.
jal_status check_header(const jal_code_object_header& h, uint64_t size, std::string* error)
{
    if (h.magic != JAL_CODE_MAGIC)
        return reject(
            error, JAL_STATUS_INVALID_FIELD,
            fmt::format("magic is {:#010x}, not {:#010x} ('JKO1')", h.magic, JAL_CODE_MAGIC));
    if (h.isa_major != JAL_ISA_VERSION_MAJOR || h.isa_minor > JAL_ISA_VERSION_MINOR)
        return reject(error, JAL_STATUS_VERSION_MISMATCH,
                      fmt::format("isa_major.isa_minor is {}.{}; this device runs ISA {}.{} (same "
                                  "major, minor at most ours)",
                                  h.isa_major, h.isa_minor, JAL_ISA_VERSION_MAJOR,
                                  JAL_ISA_VERSION_MINOR));
    if (h.header_size != sizeof(jal_code_object_header))
        return reject(error, JAL_STATUS_INVALID_LENGTH,
                      fmt::format("header_size is {}, not {}", h.header_size,
                                  sizeof(jal_code_object_header)));
    if (h.total_size > JAL_CODE_MAX_BYTES)
        return reject(error, JAL_STATUS_INVALID_LENGTH,
                      fmt::format("total_size is {}, more than the maximum {}", h.total_size,
                                  JAL_CODE_MAX_BYTES));
    if (h.total_size != size)
        return reject(
            error, JAL_STATUS_INVALID_LENGTH,
            fmt::format("total_size is {} but the object is {} bytes", h.total_size, size));
    if (h.flags != 0)
        return reject(error, JAL_STATUS_INVALID_FIELD,
                      fmt::format("flags is {:#x}, must be zero", h.flags));
    for (size_t i = 0; i < std::size(h.reserved); i++)
        if (h.reserved[i] != 0)
            return reject(error, JAL_STATUS_INVALID_FIELD,
                          fmt::format("reserved[{}] is {:#x}, must be zero", i, h.reserved[i]));

    return JAL_STATUS_OK;
}

jal_status check_code_bounds(const jal_code_object_header& h, uint64_t size, Layout& l,
                             std::string* error)
{
    // Code.
    if (h.code_words < 1)
        return reject(error, JAL_STATUS_INVALID_LENGTH,
                      "code_words is 0; a kernel has at least one instruction");
    if (h.code_offset % 8 != 0)
        return reject(error, JAL_STATUS_INVALID_LENGTH,
                      fmt::format("code_offset {} is not 8-byte aligned", h.code_offset));
    l.code_end = uint64_t{h.code_offset} + uint64_t{h.code_words} * 8;
    if (h.code_offset < h.header_size || l.code_end > size)
        return reject(error, JAL_STATUS_INVALID_LENGTH,
                      fmt::format("code (code_offset {}, code_words {}) is not inside the object's "
                                  "{} bytes after the header",
                                  h.code_offset, h.code_words, size));

    return JAL_STATUS_OK;
}

jal_status check_args_bounds(const jal_code_object_header& h, uint64_t size, Layout& l,
                             std::string* error)
{
    // Argument table.
    if (h.args_table_count > kMaxArgs)
        return reject(
            error, JAL_STATUS_INVALID_LENGTH,
            fmt::format("args_table_count is {}, more than {}", h.args_table_count, kMaxArgs));
    if (h.args_table_offset % 4 != 0)
        return reject(
            error, JAL_STATUS_INVALID_LENGTH,
            fmt::format("args_table_offset {} is not 4-byte aligned", h.args_table_offset));
    l.args_end =
        uint64_t{h.args_table_offset} + uint64_t{h.args_table_count} * sizeof(jal_code_arg);
    if (h.args_table_count > 0 && (h.args_table_offset < h.header_size || l.args_end > size))
        return reject(error, JAL_STATUS_INVALID_LENGTH,
                      fmt::format("argument table (args_table_offset {}, args_table_count {}) is "
                                  "not inside the object's {} bytes after the header",
                                  h.args_table_offset, h.args_table_count, size));
    if (h.args_size % 8 != 0)
        return reject(error, JAL_STATUS_INVALID_LENGTH,
                      fmt::format("args_size {} is not a multiple of 8", h.args_size));
    if (h.l1_bytes > JAL_SLICE_L1_BYTES)
        return reject(error, JAL_STATUS_INVALID_LENGTH,
                      fmt::format("l1_bytes is {}, more than a slice's {} bytes of L1", h.l1_bytes,
                                  JAL_SLICE_L1_BYTES));

    return JAL_STATUS_OK;
}

jal_status check_name(const jal_code_object_header& h, std::span<const uint8_t> bytes, Layout& l,
                      std::string* error)
{
    const uint64_t size = bytes.size();
    // Name.
    if (h.name_offset < h.header_size || h.name_offset >= size)
        return reject(
            error, JAL_STATUS_INVALID_LENGTH,
            fmt::format("name_offset {} is not inside the object's {} bytes after the header",
                        h.name_offset, size));
    const uint8_t* name = bytes.data() + h.name_offset;
    const size_t name_room = std::min<uint64_t>(size - h.name_offset, kMaxNameLength + 1);
    const auto* nul = static_cast<const uint8_t*>(std::memchr(name, 0, name_room));
    if (!nul)
        return reject(
            error, JAL_STATUS_INVALID_FIELD,
            fmt::format("the name at name_offset {} is not NUL-terminated within {} characters",
                        h.name_offset, kMaxNameLength));
    if (nul == name)
        return reject(error, JAL_STATUS_INVALID_FIELD,
                      fmt::format("the name at name_offset {} is empty", h.name_offset));
    l.name_end = h.name_offset + uint64_t(nul - name) + 1;

    return JAL_STATUS_OK;
}

jal_status check_overlaps(const jal_code_object_header& h, const Layout& l, std::string* error)
{
    // Sections may not overlap (an empty argument table occupies nothing).
    Section sections[3] = {{"code", h.code_offset, l.code_end},
                           {"argument table", h.args_table_offset, l.args_end},
                           {"name", h.name_offset, l.name_end}};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++) {
            const Section &p = sections[i], &q = sections[j];
            if (p.begin < p.end && q.begin < q.end && p.begin < q.end && q.begin < p.end)
                return reject(error, JAL_STATUS_INVALID_LENGTH,
                              fmt::format("{} [{}, {}) overlaps {} [{}, {})", p.what, p.begin,
                                          p.end, q.what, q.begin, q.end));
        }

    return JAL_STATUS_OK;
}

jal_status check_args_table(const jal_code_object_header& h, std::span<const uint8_t> bytes,
                            std::string* error)
{
    for (uint32_t i = 0; i < h.args_table_count; i++) {
        jal_code_arg a;
        std::memcpy(&a, bytes.data() + h.args_table_offset + size_t{i} * sizeof a, sizeof a);
        if (!std::memchr(a.name, 0, sizeof a.name))
            return reject(error, JAL_STATUS_INVALID_FIELD,
                          fmt::format("argument {}: name is not NUL-terminated within {} bytes", i,
                                      sizeof a.name));
        if (a.name[0] == 0)
            return reject(error, JAL_STATUS_INVALID_FIELD,
                          fmt::format("argument {}: name is empty", i));
        if (a.offset % 8 != 0 || uint64_t{a.offset} + 8 > h.args_size)
            return reject(error, JAL_STATUS_INVALID_FIELD,
                          fmt::format("argument {} ({}): offset {} is not a multiple of 8 with "
                                      "offset + 8 <= args_size {}",
                                      i, a.name, a.offset, h.args_size));
        if (a.kind < JAL_ARG_U64 || a.kind > JAL_ARG_F32)
            return reject(error, JAL_STATUS_INVALID_FIELD,
                          fmt::format("argument {} ({}): kind {} is not a jal_code_arg_kind (1..3)",
                                      i, a.name, a.kind));
    }

    return JAL_STATUS_OK;
}

// Every instruction, and every branch target inside the code.
jal_status check_instructions(const jal_code_object_header& h, std::span<const uint8_t> code,
                              std::string* error)
{
    for (uint32_t pc = 0; pc < h.code_words; pc++) {
        uint64_t w;
        std::memcpy(&w, code.data() + size_t{pc} * 8, sizeof w);
        std::string why;
        jal_status st = validate_instruction(w, error ? &why : nullptr);
        if (st != JAL_STATUS_OK)
            return reject(error, st, fmt::format("instruction {} ({:#018x}): {}", pc, w, why));
        if (detail::find_op(JAL_INSN_OPCODE(w))->imm == detail::Imm::branch) {
            const int64_t target = int64_t{pc} + JAL_INSN_IMM(w);
            if (target < 0 || target >= int64_t{h.code_words})
                return reject(
                    error, JAL_STATUS_INVALID_FIELD,
                    fmt::format(
                        "instruction {} ({:#018x}): branch target {} is outside the code (0..{})",
                        pc, w, target, h.code_words - 1));
        }
    }
    return JAL_STATUS_OK;
}

}  // namespace

jal_status validate_code_object(std::span<const uint8_t> bytes, std::string* error)
{
    const uint64_t size = bytes.size();
    if (size < sizeof(jal_code_object_header))
        return reject(error, JAL_STATUS_INVALID_LENGTH,
                      fmt::format("object is {} bytes, smaller than its {}-byte header", size,
                                  sizeof(jal_code_object_header)));
    jal_code_object_header h;
    std::memcpy(&h, bytes.data(), sizeof h);

    Layout l;
    jal_status st;
    if ((st = check_header(h, size, error)) != JAL_STATUS_OK ||
        (st = check_code_bounds(h, size, l, error)) != JAL_STATUS_OK ||
        (st = check_args_bounds(h, size, l, error)) != JAL_STATUS_OK ||
        (st = check_name(h, bytes, l, error)) != JAL_STATUS_OK ||
        (st = check_overlaps(h, l, error)) != JAL_STATUS_OK)
        return st;

    // CRC before decoding: a corrupted word is reported as corruption, not as a bad field.
    const auto code = bytes.subspan(h.code_offset, size_t{h.code_words} * 8);
    const uint32_t crc = crc32(code);
    if (crc != h.code_crc32)
        return reject(error, JAL_STATUS_INVALID_FIELD,
                      fmt::format("code_crc32 is {:#010x} but the code's CRC-32 is {:#010x}",
                                  h.code_crc32, crc));

    if ((st = check_args_table(h, bytes, error)) != JAL_STATUS_OK) return st;
    return check_instructions(h, code, error);
}

}  // namespace jal::isa
