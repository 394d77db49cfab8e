// Code objects: the CRC, the encoder's layout, and the validator accepting a good object
// and rejecting each malformed variant with a message that names what is wrong.
#include <cctype>
#include <cstddef>
#include <functional>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include <jal/isa/disasm.hpp>

#include "good_object.hpp"

namespace {

using jal::isa::validate_code_object;
using jal::test::good_object;
using jal::test::header_of;

TEST(Crc32, MatchesTheIeeeCheckValue)
{
    const std::string s = "123456789";
    EXPECT_EQ(jal::isa::crc32({reinterpret_cast<const uint8_t*>(s.data()), s.size()}), 0xcbf43926u);
    EXPECT_EQ(jal::isa::crc32({}), 0u);
}

TEST(CodeObject, EncoderLaysOutHeaderCodeArgsAndName)
{
    auto bytes = good_object();
    auto h = header_of(bytes);
    EXPECT_EQ(h.magic, JAL_CODE_MAGIC);
    EXPECT_EQ(h.isa_major, JAL_ISA_VERSION_MAJOR);
    EXPECT_EQ(h.isa_minor, JAL_ISA_VERSION_MINOR);
    EXPECT_EQ(h.header_size, 64u);
    EXPECT_EQ(h.total_size, bytes.size());
    EXPECT_EQ(h.code_offset, 64u);
    EXPECT_EQ(h.code_words, 9u);
    EXPECT_EQ(h.args_table_offset, 64u + 9 * 8);
    EXPECT_EQ(h.args_table_count, 2u);
    EXPECT_EQ(h.name_offset, 64u + 9 * 8 + 2 * 28);
    EXPECT_EQ(h.args_size, 16u);
    EXPECT_EQ(h.l1_bytes, 4096u);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data() + h.name_offset)), "count_up");
}

TEST(CodeObject, GoodObjectValidatesAndParses)
{
    auto bytes = good_object();
    std::string error = "untouched";
    ASSERT_EQ(validate_code_object(bytes, &error), JAL_STATUS_OK) << error;
    jal::isa::CodeObjectView v;
    ASSERT_EQ(jal::isa::parse_code_object(bytes, &v, &error), JAL_STATUS_OK);
    EXPECT_EQ(v.name, "count_up");
    EXPECT_EQ(v.code, jal::test::good_code());
    ASSERT_EQ(v.args.size(), 2u);
    EXPECT_STREQ(v.args[1].name, "out");
    EXPECT_EQ(v.args[1].offset, 8u);
    EXPECT_EQ(v.args[1].kind, uint32_t{JAL_ARG_ADDRESS});
}

TEST(CodeObject, ObjectWithoutArgumentsIsValid)
{
    std::vector<uint64_t> code = {JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0)};
    auto bytes = jal::isa::encode_code_object("nothing", code, 0, 0, {});
    std::string error;
    EXPECT_EQ(validate_code_object(bytes, &error), JAL_STATUS_OK) << error;
}

template <typename T>
void put(std::vector<uint8_t>& b, size_t offset, T v)
{
    std::memcpy(b.data() + offset, &v, sizeof v);
}
template <typename T>
T get(const std::vector<uint8_t>& b, size_t offset)
{
    T v;
    std::memcpy(&v, b.data() + offset, sizeof v);
    return v;
}

struct Mutation {
    const char* what;
    std::function<void(std::vector<uint8_t>&)> mutate;
    jal_status status;
    const char* message;  // a substring of the error
};

class MalformedObject : public testing::TestWithParam<Mutation> {};

TEST_P(MalformedObject, IsRejectedWithAMessageNamingIt)
{
    const Mutation& m = GetParam();
    auto bytes = good_object();
    m.mutate(bytes);
    std::string error;
    EXPECT_EQ(validate_code_object(bytes, &error), m.status) << m.what << ": " << error;
    EXPECT_NE(error.find(m.message), std::string::npos)
        << m.what << ": \"" << error << "\" lacks \"" << m.message << "\"";
    jal::isa::CodeObjectView v;
    v.name = "untouched";
    EXPECT_EQ(jal::isa::parse_code_object(bytes, &v, nullptr), m.status);
    EXPECT_EQ(v.name, "untouched");
}

constexpr size_t kName = 64 + 9 * 8 + 2 * 28;  // name_offset of the good object
constexpr size_t kArgs = 64 + 9 * 8;           // args_table_offset

std::vector<uint8_t> with_name(std::string_view name)
{
    auto code = jal::test::good_code();
    auto args = jal::test::good_args();
    return jal::isa::encode_code_object(name, code, 16, 0, args);
}

const Mutation kMutations[] = {
    {"magic", [](auto& b) { put<uint32_t>(b, 0, 0x12345678); }, JAL_STATUS_INVALID_FIELD,
     "magic is 0x12345678"},
    {"isa_major", [](auto& b) { put<uint16_t>(b, 4, JAL_ISA_VERSION_MAJOR + 1); },
     JAL_STATUS_VERSION_MISMATCH, "isa_major"},
    {"isa_minor newer", [](auto& b) { put<uint16_t>(b, 6, JAL_ISA_VERSION_MINOR + 1); },
     JAL_STATUS_VERSION_MISMATCH, "isa_minor"},
    {"header_size", [](auto& b) { put<uint32_t>(b, 8, 32); }, JAL_STATUS_INVALID_LENGTH,
     "header_size is 32"},
    {"total_size larger", [](auto& b) { put<uint32_t>(b, 12, get<uint32_t>(b, 12) + 8); },
     JAL_STATUS_INVALID_LENGTH, "total_size is"},
    {"total_size over the maximum", [](auto& b) { put<uint32_t>(b, 12, JAL_CODE_MAX_BYTES + 1); },
     JAL_STATUS_INVALID_LENGTH, "more than the maximum"},
    {"truncated by a byte", [](auto& b) { b.pop_back(); }, JAL_STATUS_INVALID_LENGTH,
     "but the object is"},
    {"truncated into the header", [](auto& b) { b.resize(10); }, JAL_STATUS_INVALID_LENGTH,
     "smaller than its 64-byte header"},
    {"empty", [](auto& b) { b.clear(); }, JAL_STATUS_INVALID_LENGTH, "object is 0 bytes"},
    {"code_offset misaligned", [](auto& b) { put<uint32_t>(b, 16, 68); }, JAL_STATUS_INVALID_LENGTH,
     "code_offset 68 is not 8-byte aligned"},
    {"code_offset inside the header", [](auto& b) { put<uint32_t>(b, 16, 8); },
     JAL_STATUS_INVALID_LENGTH, "code (code_offset 8"},
    {"code_words 0", [](auto& b) { put<uint32_t>(b, 20, 0); }, JAL_STATUS_INVALID_LENGTH,
     "code_words is 0"},
    {"code past the end", [](auto& b) { put<uint32_t>(b, 20, 1000); }, JAL_STATUS_INVALID_LENGTH,
     "code_words 1000) is not inside"},
    {"code overlaps the argument table", [](auto& b) { put<uint32_t>(b, 20, 10); },
     JAL_STATUS_INVALID_LENGTH, "code [64, 144) overlaps argument table"},
    {"name_offset past the end",
     [](auto& b) { put<uint32_t>(b, 24, static_cast<uint32_t>(b.size())); },
     JAL_STATUS_INVALID_LENGTH, "name_offset"},
    {"name_offset inside the header", [](auto& b) { put<uint32_t>(b, 24, 4); },
     JAL_STATUS_INVALID_LENGTH, "name_offset 4"},
    {"name inside the code", [](auto& b) { put<uint32_t>(b, 24, 64 + 8 * 3 + 6); },
     JAL_STATUS_INVALID_LENGTH, "overlaps name"},
    {"name not NUL-terminated", [](auto& b) { b.back() = 'x'; }, JAL_STATUS_INVALID_FIELD,
     "not NUL-terminated"},
    {"name 64 characters", [](auto& b) { b = with_name(std::string(64, 'k')); },
     JAL_STATUS_INVALID_FIELD, "not NUL-terminated within 63 characters"},
    {"name empty", [](auto& b) { b = with_name(""); }, JAL_STATUS_INVALID_FIELD, "is empty"},
    {"args_size not a multiple of 8", [](auto& b) { put<uint32_t>(b, 28, 12); },
     JAL_STATUS_INVALID_LENGTH, "args_size 12"},
    {"l1_bytes over L1", [](auto& b) { put<uint32_t>(b, 32, JAL_SLICE_L1_BYTES + 64); },
     JAL_STATUS_INVALID_LENGTH, "l1_bytes is 4194368"},
    {"flags", [](auto& b) { put<uint32_t>(b, 36, 1); }, JAL_STATUS_INVALID_FIELD, "flags is 0x1"},
    {"crc", [](auto& b) { put<uint32_t>(b, 40, get<uint32_t>(b, 40) ^ 1); },
     JAL_STATUS_INVALID_FIELD, "code_crc32"},
    {"a code byte", [](auto& b) { b[64 + 8 * 3 + 2] ^= 0x10; }, JAL_STATUS_INVALID_FIELD,
     "code_crc32"},
    {"args_table_offset misaligned", [](auto& b) { put<uint32_t>(b, 44, kArgs + 2); },
     JAL_STATUS_INVALID_LENGTH, "args_table_offset 138 is not 4-byte aligned"},
    {"args_table_count over 64", [](auto& b) { put<uint32_t>(b, 48, 65); },
     JAL_STATUS_INVALID_LENGTH, "args_table_count is 65"},
    {"name inside the argument table", [](auto& b) { put<uint32_t>(b, 24, kArgs); },
     JAL_STATUS_INVALID_LENGTH, "argument table [136, 192) overlaps name [136, 138)"},
    {"argument table past the end", [](auto& b) { put<uint32_t>(b, 48, 20); },
     JAL_STATUS_INVALID_LENGTH, "args_table_count 20) is not inside"},
    {"reserved[0]", [](auto& b) { put<uint32_t>(b, 52, 7); }, JAL_STATUS_INVALID_FIELD,
     "reserved[0] is 0x7"},
    {"reserved[2]", [](auto& b) { put<uint32_t>(b, 60, 1); }, JAL_STATUS_INVALID_FIELD,
     "reserved[2]"},
    {"argument name unterminated", [](auto& b) { std::memset(b.data() + kArgs, 'a', 20); },
     JAL_STATUS_INVALID_FIELD, "argument 0: name is not NUL-terminated"},
    {"argument name empty", [](auto& b) { b[kArgs] = 0; }, JAL_STATUS_INVALID_FIELD,
     "argument 0: name is empty"},
    {"argument offset misaligned", [](auto& b) { put<uint32_t>(b, kArgs + 28 + 20, 4); },
     JAL_STATUS_INVALID_FIELD, "argument 1 (out): offset 4"},
    {"argument past args_size", [](auto& b) { put<uint32_t>(b, kArgs + 28 + 20, 16); },
     JAL_STATUS_INVALID_FIELD, "argument 1 (out): offset 16"},
    {"argument kind", [](auto& b) { put<uint32_t>(b, kArgs + 24, 9); }, JAL_STATUS_INVALID_FIELD,
     "argument 0 (n): kind 9"},
    {"unknown opcode", [](auto& b) { jal::test::rewrite_word(b, 5, uint64_t{0xff} << 56); },
     JAL_STATUS_INVALID_OPCODE, "instruction 5 (0xff00000000000000): opcode 0xff"},
    {"scalar register out of range",
     [](auto& b) { jal::test::rewrite_word(b, 6, JAL_INSN(JAL_OP_ADDI, 40, 4, 0, 0, 1)); },
     JAL_STATUS_INVALID_FIELD,
     "instruction 6 (0x18a0400000000001): addi: field a is 40, not a scalar register"},
    {"unused field set",
     [](auto& b) { jal::test::rewrite_word(b, 8, JAL_INSN(JAL_OP_END, 0, 0, 1, 0, 0)); },
     JAL_STATUS_INVALID_FIELD, "instruction 8 (0x0000004000000000): end: field c is 1, unused"},
    {"branch past the end",
     [](auto& b) { jal::test::rewrite_word(b, 4, JAL_INSN(JAL_OP_BGE, 4, 2, 0, 0, 5)); },
     JAL_STATUS_INVALID_FIELD,
     "instruction 4 (0x2310200000000005): branch target 9 is outside the code (0..8)"},
    {"branch before the start",
     [](auto& b) { jal::test::rewrite_word(b, 7, JAL_INSN(JAL_OP_JMP, 0, 0, 0, 0, -8)); },
     JAL_STATUS_INVALID_FIELD, "branch target -1 is outside the code"},
};

INSTANTIATE_TEST_SUITE_P(Mutations, MalformedObject, testing::ValuesIn(kMutations),
                         [](const testing::TestParamInfo<Mutation>& info) {
                             std::string n;
                             for (const char* p = info.param.what; *p; p++)
                                 n += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
                             return n;
                         });

// Random corruption never crashes the validator, and a corrupted code word is never
// accepted (the CRC covers it).
TEST(CodeObjectFuzz, RandomByteMutationsNeverCrashAndCorruptCodeIsRejected)
{
    const auto good = good_object();
    const auto h = header_of(good);
    const size_t code_begin = h.code_offset, code_end = h.code_offset + size_t{h.code_words} * 8;
    std::mt19937_64 rng(20261202);
    int accepted = 0;
    for (int iter = 0; iter < 50000; iter++) {
        auto bytes = good;
        const int n = 1 + static_cast<int>(rng() % 4);
        bool code_only = true;
        for (int k = 0; k < n; k++) {
            size_t at = rng() % bytes.size();
            uint8_t v = static_cast<uint8_t>(rng());
            bytes[at] = v;
            code_only &= at >= code_begin && at < code_end;
        }
        const bool changed = bytes != good;
        if (rng() % 16 == 0) {
            bytes.resize(rng() % (bytes.size() + 16));
            code_only = false;
        }
        std::string error;
        jal_status st = validate_code_object(bytes, &error);
        if (st == JAL_STATUS_OK) {
            accepted++;
        } else {
            EXPECT_FALSE(error.empty());
        }
        if (code_only && changed) {
            ASSERT_NE(st, JAL_STATUS_OK)
                << "a corrupted code word was accepted at iteration " << iter;
        }
        jal::isa::read_code_object_unchecked(bytes);  // must not crash either
    }
    // Some mutations (e.g. of a name character) are harmless and accepted; most are not.
    EXPECT_LT(accepted, 50000);
}

TEST(CodeObjectFuzz, RandomHeadersNeverCrash)
{
    std::mt19937_64 rng(7);
    for (int iter = 0; iter < 20000; iter++) {
        std::vector<uint8_t> bytes(64 + rng() % 512);
        for (auto& b : bytes) b = static_cast<uint8_t>(rng());
        jal_code_object_header h{};
        h.magic = JAL_CODE_MAGIC;
        h.isa_major = JAL_ISA_VERSION_MAJOR;
        h.header_size = 64;
        h.total_size = static_cast<uint32_t>(bytes.size());
        h.code_offset = static_cast<uint32_t>(rng() % bytes.size()) & ~7u;
        h.code_words = static_cast<uint32_t>(rng() % 64);
        h.name_offset = static_cast<uint32_t>(rng() % (bytes.size() + 8));
        h.args_table_offset = static_cast<uint32_t>(rng() % bytes.size()) & ~3u;
        h.args_table_count = static_cast<uint32_t>(rng() % 8);
        h.args_size = static_cast<uint32_t>(rng() % 64) & ~7u;
        std::memcpy(bytes.data(), &h, sizeof h);
        std::string error;
        (void)validate_code_object(bytes, &error);
        (void)jal::isa::read_code_object_unchecked(bytes);
        (void)jal::isa::disassemble(bytes);
    }
}

}  // namespace
