// Code objects in and out: the encoder (header, code, argument table, name), the parser of
// validated objects, and the forgiving reader jal-objdump --force uses on broken ones.
#include <jal/isa/code_object.hpp>

#include <algorithm>
#include <cstring>

namespace jal::isa {

std::vector<uint8_t> encode_code_object(std::string_view name, std::span<const uint64_t> code,
                                        uint32_t args_size, uint32_t l1_bytes,
                                        std::span<const jal_code_arg> args)
{
    jal_code_object_header h{};
    h.magic = JAL_CODE_MAGIC;
    h.isa_major = JAL_ISA_VERSION_MAJOR;
    h.isa_minor = JAL_ISA_VERSION_MINOR;
    h.header_size = sizeof h;
    h.code_offset = sizeof h;  // 64: 8-byte aligned
    h.code_words = static_cast<uint32_t>(code.size());
    h.args_table_offset = h.code_offset + h.code_words * 8;  // 4-byte aligned
    h.args_table_count = static_cast<uint32_t>(args.size());
    h.name_offset =
        h.args_table_offset + h.args_table_count * static_cast<uint32_t>(sizeof(jal_code_arg));
    h.total_size = h.name_offset + static_cast<uint32_t>(name.size()) + 1;
    h.args_size = args_size;
    h.l1_bytes = l1_bytes;
    h.code_crc32 = crc32({reinterpret_cast<const uint8_t*>(code.data()), code.size_bytes()});

    std::vector<uint8_t> out(h.total_size, 0);
    std::memcpy(out.data(), &h, sizeof h);
    if (!code.empty()) std::memcpy(out.data() + h.code_offset, code.data(), code.size_bytes());
    if (!args.empty())
        std::memcpy(out.data() + h.args_table_offset, args.data(), args.size_bytes());
    if (!name.empty()) std::memcpy(out.data() + h.name_offset, name.data(), name.size());
    return out;
}

CodeObjectView read_code_object_unchecked(std::span<const uint8_t> bytes)
{
    // memcpy of zero bytes still needs valid pointers, hence the guards on empty parts.
    CodeObjectView v;
    if (!bytes.empty())
        std::memcpy(&v.header, bytes.data(), std::min(bytes.size(), sizeof v.header));
    const jal_code_object_header& h = v.header;
    const uint64_t size = bytes.size();

    if (h.code_offset < size) {
        uint64_t words = std::min<uint64_t>(h.code_words, (size - h.code_offset) / 8);
        v.code.resize(words);
        if (words) std::memcpy(v.code.data(), bytes.data() + h.code_offset, words * 8);
    }
    if (h.args_table_offset < size) {
        uint64_t n = std::min<uint64_t>({h.args_table_count,
                                         (size - h.args_table_offset) / sizeof(jal_code_arg),
                                         uint64_t{kMaxArgs}});
        v.args.resize(n);
        if (n)
            std::memcpy(v.args.data(), bytes.data() + h.args_table_offset,
                        n * sizeof(jal_code_arg));
        for (jal_code_arg& a : v.args)
            a.name[sizeof a.name - 1] = 0;  // printable even when unterminated
    }
    if (h.name_offset < size) {
        const char* p = reinterpret_cast<const char*>(bytes.data() + h.name_offset);
        size_t room = std::min<uint64_t>(size - h.name_offset, kMaxNameLength + 1);
        v.name.assign(p, strnlen(p, room));
    }
    return v;
}

jal_status parse_code_object(std::span<const uint8_t> bytes, CodeObjectView* out,
                             std::string* error)
{
    jal_status st = validate_code_object(bytes, error);
    if (st == JAL_STATUS_OK && out) *out = read_code_object_unchecked(bytes);
    return st;
}

}  // namespace jal::isa
