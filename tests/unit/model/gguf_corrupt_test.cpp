// Corrupt GGUF files: each gets a jal::Error whose message says what is wrong and where,
// never a crash (the suite also runs under ASan + UBSan). Files are held in vectors of
// exactly their size, so any read past the end is caught by ASan.
#include <gtest/gtest.h>

#include "gguf_test_util.hpp"

namespace jal::model::test {
namespace {

constexpr uint32_t kString = 8, kArray = 9, kU32 = 4, kBool = 7;
constexpr uint32_t kF32 = 0, kQ8_0 = 8;

GgufFile parse(const RawGguf& raw)
{
    return GgufFile::from_bytes(raw.bytes(), "bad.gguf");
}

void expect_bad(const RawGguf& raw, jal_status status, std::vector<std::string> parts)
{
    parts.insert(parts.begin(), "bad.gguf: ");
    expect_error([&] { parse(raw); }, status, parts);
}

// Two pairs and two tensors, laid out by hand:
//   0 header | 24 general.name = "m" | 57 a.arr = [7, 9] u32 | 94 't0' f32 [32] @0 |
//   128 't1' q8_0 [32] @128 | 162 padding | 192 t0 data (128) | 320 t1 data (34) | 354
RawGguf two_tensors(uint64_t t0_offset = 0, uint64_t t1_offset = 128)
{
    RawGguf r;
    r.header(2, 2);
    r.str("general.name").u32(kString).str("m");
    r.str("a.arr").u32(kArray).u32(kU32).u64(2).u32(7).u32(9);
    r.tensor("t0", {32}, kF32, t0_offset);
    r.tensor("t1", {32}, kQ8_0, t1_offset);
    r.pad().zeros(128 + 34);
    return r;
}

TEST(GgufCorrupt, TheHandMadeFileIsValid)
{
    const RawGguf r = two_tensors();
    ASSERT_EQ(r.size(), 354u);
    const GgufFile f = parse(r);
    EXPECT_EQ(f.get_string("general.name"), "m");
    EXPECT_EQ(f.get_int_array("a.arr"), (std::vector<int64_t>{7, 9}));
    EXPECT_EQ(f.data_section_offset(), 192u);
    EXPECT_EQ(f.tensor("t0").data_offset, 192u);
    EXPECT_EQ(f.tensor("t1").data_offset, 320u);
    EXPECT_EQ(f.tensor("t1").info_offset, 128u);
}

TEST(GgufCorrupt, TruncatedAtEveryByte)
{
    const std::vector<std::byte> full = two_tensors().bytes();
    for (size_t cut = 0; cut < full.size(); ++cut) {
        SCOPED_TRACE(cut);
        std::vector<std::byte> part(full.begin(), full.begin() + static_cast<ptrdiff_t>(cut));
        expect_error([&] { GgufFile::from_bytes(std::move(part), "cut.gguf"); },
                     JAL_STATUS_INVALID_LENGTH, {"cut.gguf: ", "offset"});
    }
}

TEST(GgufCorrupt, TruncatedAtStructuralBoundaries)
{
    const std::vector<std::byte> full = two_tensors().bytes();
    auto cut = [&](size_t n, std::vector<std::string> parts) {
        SCOPED_TRACE(n);
        std::vector<std::byte> part(full.begin(), full.begin() + static_cast<ptrdiff_t>(n));
        expect_error([&] { GgufFile::from_bytes(std::move(part), "cut.gguf"); },
                     JAL_STATUS_INVALID_LENGTH, parts);
    };
    cut(0, {"header at offset 0: the magic needs 4 bytes but only 0 remain", "truncated"});
    cut(4, {"header at offset 4: the version needs 4 bytes but only 0 remain"});
    cut(8, {"the tensor count needs 8 bytes"});
    cut(16, {"the key/value count needs 8 bytes"});
    cut(24, {"key/value count 2 needs at least 13 bytes each but only 0 bytes remain"});
    cut(170, {"data section at offset 162: starts at offset 192 (aligned to 32), past the end of "
              "the file (170 bytes)"});
    cut(192, {"tensor 't0' at offset 94: data at offset 192 (data section + 0) of 128 bytes ends "
              "past the end of the "
              "file (192 bytes)"});
    cut(353, {"tensor 't1' at offset 128: data at offset 320 (data section + 128) of 34 bytes ends "
              "past the end"});

    // Inside a pair: a file whose counts fit, cut within the key, the type and the value.
    RawGguf one;
    one.header(0, 1).str("general.name").u32(kString).str("a string value");
    const std::vector<std::byte> kv = one.bytes();
    auto cut_kv = [&](size_t n, std::vector<std::string> parts) {
        SCOPED_TRACE(n);
        std::vector<std::byte> part(kv.begin(), kv.begin() + static_cast<ptrdiff_t>(n));
        expect_error([&] { GgufFile::from_bytes(std::move(part), "kv.gguf"); },
                     JAL_STATUS_INVALID_LENGTH, parts);
    };
    cut_kv(40, {"key/value pair 0 at offset 24: the key has length 12 but only 8 bytes remain"});
    cut_kv(45, {"key 'general.name' at offset 44: the value type needs 4 bytes but only 1 remain"});
    cut_kv(60, {"key 'general.name' at offset 48: the string value has length 14 but only 4 bytes "
                "remain"});
    cut_kv(50, {"key 'general.name' at offset 48: the length of the string value needs 8 bytes but "
                "only 2 remain"});
}

TEST(GgufCorrupt, BadMagicAndVersion)
{
    RawGguf ggml;
    ggml.u32(0x4c4d4747).u32(3).u64(0).u64(0);
    expect_bad(ggml, JAL_STATUS_INVALID_FIELD,
               {"header at offset 0: magic 0x4c4d4747, expected 0x46554747 (\"GGUF\")"});
    RawGguf v1;
    v1.header(0, 0, 1);
    expect_bad(v1, JAL_STATUS_INVALID_FIELD,
               {"offset 4: version 1, expected 2 or 3 (version 1 is obsolete)"});
    RawGguf v4;
    v4.header(0, 0, 4);
    expect_bad(v4, JAL_STATUS_INVALID_FIELD, {"version 4, expected 2 or 3"});
    RawGguf big_endian;
    big_endian.header(0, 0, 0x03000000);
    expect_bad(big_endian, JAL_STATUS_INVALID_FIELD, {"version 50331648", "big-endian"});
    RawGguf v2;
    v2.header(0, 1, 2).str("k").u32(kU32).u32(5);
    EXPECT_EQ(parse(v2).get_u32("k"), 5u);
    EXPECT_EQ(parse(v2).version(), 2u);
}

TEST(GgufCorrupt, HugeCounts)
{
    RawGguf tensors;
    tensors.header(1ULL << 63, 0).zeros(64);
    expect_bad(tensors, JAL_STATUS_INVALID_LENGTH,
               {"header at offset 8: tensor count 9223372036854775808 needs at least 32 bytes each "
                "but only 64 bytes "
                "remain"});
    RawGguf kvs;
    kvs.header(0, UINT64_MAX).zeros(64);
    expect_bad(kvs, JAL_STATUS_INVALID_LENGTH,
               {"key/value count 18446744073709551615 needs at least 13 bytes each"});
    RawGguf both;  // each fits alone, not together
    both.header(2, 2).zeros(13 * 2 + 32);
    expect_bad(both, JAL_STATUS_INVALID_LENGTH,
               {"tensor count 2 needs at least 32 bytes each but only 58"});
}

TEST(GgufCorrupt, HugeStringAndArrayLengths)
{
    RawGguf key;
    key.header(0, 1).u64(UINT64_MAX).zeros(20);
    expect_bad(key, JAL_STATUS_INVALID_LENGTH,
               {"key/value pair 0 at offset 24: the key has length 18446744073709551615 but "
                "only 20 bytes remain"});
    RawGguf value;
    value.header(0, 1).str("s").u32(kString).u64(1ULL << 62).zeros(8);
    expect_bad(value, JAL_STATUS_INVALID_LENGTH,
               {"key 's'", "string value has length 4611686018427387904"});
    RawGguf arr;
    arr.header(0, 1).str("a").u32(kArray).u32(kU32).u64(1ULL << 62).zeros(16);
    expect_bad(arr, JAL_STATUS_INVALID_LENGTH,
               {"key 'a' at offset 41: array of 4611686018427387904 u32 elements needs at least 4 "
                "bytes per element "
                "but only 16 bytes remain"});
    RawGguf strs;
    strs.header(0, 1).str("tokens").u32(kArray).u32(kString).u64(1ULL << 40).zeros(16);
    expect_bad(strs, JAL_STATUS_INVALID_LENGTH,
               {"key 'tokens'", "array of 1099511627776 string elements"});
    RawGguf elem;  // the count fits, the second string does not
    elem.header(0, 1).str("tokens").u32(kArray).u32(kString).u64(2).str("ok").u64(1000).zeros(8);
    expect_bad(elem, JAL_STATUS_INVALID_LENGTH,
               {"key 'tokens'", "string element 1 has length 1000 but only 8 bytes"});
    RawGguf name;
    name.header(1, 0).u64(UINT64_MAX - 3).zeros(40);
    expect_bad(name, JAL_STATUS_INVALID_LENGTH,
               {"tensor description 0 at offset 24: the tensor name has length"});
}

TEST(GgufCorrupt, BadKeyValues)
{
    RawGguf type;
    type.header(0, 1).str("k").u32(13).u32(0);
    expect_bad(type, JAL_STATUS_INVALID_FIELD,
               {"key 'k' at offset 33: value type 13, expected 0..12"});
    RawGguf elem;
    elem.header(0, 1).str("k").u32(kArray).u32(77).u64(0);
    expect_bad(elem, JAL_STATUS_INVALID_FIELD, {"key 'k' at offset 37: array element type 77"});
    RawGguf nested;
    nested.header(0, 1).str("k").u32(kArray).u32(kArray).u64(0);
    expect_bad(nested, JAL_STATUS_INVALID_FIELD, {"key 'k'", "array of arrays"});
    RawGguf boolean;
    boolean.header(0, 1).str("b").u32(kBool).u8(2);
    expect_bad(boolean, JAL_STATUS_INVALID_FIELD,
               {"key 'b' at offset 37: bool value 2, expected 0 or 1"});
    RawGguf bools;
    bools.header(0, 1).str("b").u32(kArray).u32(kBool).u64(3).u8(1).u8(0).u8(9);
    expect_bad(bools, JAL_STATUS_INVALID_FIELD, {"key 'b'", "bool element 2 is 9"});
    RawGguf dup;
    dup.header(0, 2).str("k").u32(kU32).u32(1).str("k").u32(kU32).u32(2);
    expect_bad(dup, JAL_STATUS_INVALID_FIELD, {"key 'k' at offset 41: duplicate key"});
    RawGguf empty;
    empty.header(0, 1).str("").u32(kU32).u32(1);
    expect_bad(empty, JAL_STATUS_INVALID_FIELD, {"key/value pair 0 at offset 24: empty key"});
}

TEST(GgufCorrupt, BadAlignment)
{
    for (uint32_t a : {0u, 24u, 33u}) {
        RawGguf r;
        r.header(0, 1).str("general.alignment").u32(kU32).u32(a);
        expect_bad(r, JAL_STATUS_INVALID_FIELD,
                   {"key 'general.alignment' at offset 24: alignment " + std::to_string(a) +
                    ", expected a non-zero power of two"});
    }
    RawGguf s;
    s.header(0, 1).str("general.alignment").u32(kString).str("64");
    expect_bad(s, JAL_STATUS_INVALID_FIELD,
               {"key 'general.alignment'", "type string, expected u32"});

    // With 64, the data section and every offset move to multiples of 64.
    RawGguf r64;
    r64.header(1, 1)
        .str("general.alignment")
        .u32(kU32)
        .u32(64)
        .tensor("t", {16}, kF32, 0)
        .pad(64)
        .zeros(64);
    const GgufFile f = parse(r64);
    EXPECT_EQ(f.alignment(), 64u);
    EXPECT_EQ(f.data_section_offset() % 64, 0u);
    RawGguf mis64;
    mis64.header(2, 1).str("general.alignment").u32(kU32).u32(64);
    mis64.tensor("a", {8}, kF32, 0).tensor("b", {8}, kF32, 32).pad(64).zeros(128);
    expect_bad(mis64, JAL_STATUS_INVALID_FIELD,
               {"tensor 'b'", "data offset 32 is not a multiple of the alignment 64"});
}

TEST(GgufCorrupt, BadTensorOffsets)
{
    expect_bad(two_tensors(0, 16), JAL_STATUS_INVALID_FIELD,
               {"tensor 't1' at offset 128: data offset 16 is not a multiple of the alignment 32"});
    expect_bad(two_tensors(0, 4096), JAL_STATUS_INVALID_LENGTH,
               {"tensor 't1' at offset 128: data at offset 4288 (data section + 4096) of 34 bytes "
                "ends past the end of "
                "the file (354 bytes)"});
    expect_bad(two_tensors(0, UINT64_MAX - 31), JAL_STATUS_INVALID_LENGTH,
               {"tensor 't1'", "ends past the end"});
    expect_bad(two_tensors(0, 64), JAL_STATUS_INVALID_FIELD,
               {"tensor 't1' at offset 128: data at offset 256 overlaps tensor 't0' (offset 192, "
                "128 bytes)"});
    expect_bad(two_tensors(0, 0), JAL_STATUS_INVALID_FIELD, {"overlaps tensor"});
    // Out of order but disjoint is fine.
    RawGguf swapped = two_tensors(160, 0);  // t1 (34 bytes) at 0, t0 (128) at 160
    swapped.zeros(128);
    const GgufFile f = parse(swapped);
    EXPECT_EQ(f.tensor("t0").data_offset, 192u + 160u);
}

TEST(GgufCorrupt, BadTensorDescriptions)
{
    auto one = [](std::vector<uint64_t> ne, uint32_t type, std::string name = "w") {
        RawGguf r;
        r.header(1, 0).tensor(name, ne, type, 0).pad().zeros(256);
        return r;
    };
    expect_bad(one({}, kF32), JAL_STATUS_INVALID_FIELD,
               {"tensor 'w' at offset 33: n_dims 0, expected 1..4"});
    expect_bad(one({1, 1, 1, 1, 1}, kF32), JAL_STATUS_INVALID_FIELD, {"n_dims 5, expected 1..4"});
    expect_bad(one({4, 0}, kF32), JAL_STATUS_INVALID_FIELD,
               {"tensor 'w' at offset 45: dimension 1 is 0, expected at least 1"});
    expect_bad(
        one({1ULL << 32, 1ULL << 32}, kF32), JAL_STATUS_INVALID_LENGTH,
        {"tensor 'w'", "dimension 1 of 4294967296 makes the element count overflow 63 bits"});
    expect_bad(one({1ULL << 40}, kF32), JAL_STATUS_INVALID_LENGTH,
               {"tensor 'w' at offset 24: shape [1099511627776] of type f32 needs more bytes than "
                "the whole file"});
    expect_bad(one({8}, 99), JAL_STATUS_INVALID_FIELD,
               {"tensor 'w' at offset 45: tensor type 99, expected a known ggml type"});
    expect_bad(one({8}, 4), JAL_STATUS_INVALID_FIELD,
               {"tensor type 4"});  // Q4_2, removed from ggml
    expect_bad(
        one({33, 2}, kQ8_0), JAL_STATUS_INVALID_LENGTH,
        {"tensor 'w'", "row of 33 elements is not a whole number of 32-element q8_0 blocks"});
    EXPECT_EQ(parse(one({64, 2}, 39 /* mxfp4 */)).tensor("w").data.size(), 4u * 17u);
}

TEST(GgufCorrupt, BadTensorNames)
{
    RawGguf dup;
    dup.header(2, 0).tensor("w", {8}, kF32, 0).tensor("w", {8}, kF32, 32).pad().zeros(64);
    expect_bad(dup, JAL_STATUS_INVALID_FIELD, {"tensor 'w' at offset 57: duplicate tensor name"});
    RawGguf empty;
    empty.header(1, 0).tensor("", {8}, kF32, 0).pad().zeros(32);
    expect_bad(empty, JAL_STATUS_INVALID_FIELD,
               {"tensor description 0 at offset 24: empty tensor name"});
    RawGguf longname;
    longname.header(1, 0).tensor(std::string(64, 'x'), {8}, kF32, 0).pad().zeros(32);
    expect_bad(longname, JAL_STATUS_INVALID_LENGTH, {"name of 64 bytes, expected at most 63"});
}

}  // namespace
}  // namespace jal::model::test
