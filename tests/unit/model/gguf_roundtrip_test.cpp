// Writer -> reader: every key/value type and every tensor type comes back as written.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf_test_util.hpp"

namespace jal::model::test {
namespace {

std::vector<std::byte> pattern(size_t index, uint64_t bytes)
{
    std::vector<std::byte> d(bytes);
    for (uint64_t i = 0; i < bytes; ++i)
        d[i] = static_cast<std::byte>((i * 7 + index * 13 + 1) & 0xff);
    return d;
}

TEST(GgufRoundTrip, EveryScalarType)
{
    GgufWriter w;
    w.set_u8("t.u8", 200);
    w.set_i8("t.i8", -100);
    w.set_u16("t.u16", 60000);
    w.set_i16("t.i16", -30000);
    w.set_u32("t.u32", 4000000000u);
    w.set_i32("t.i32", -2000000000);
    w.set_u64("t.u64", 0xfedcba9876543210ULL);
    w.set_i64("t.i64", INT64_MIN + 1);
    w.set_f32("t.f32", 1.5f);
    w.set_f64("t.f64", -2.25);
    w.set_bool("t.true", true);
    w.set_bool("t.false", false);
    w.set_string("t.str", "hello, gguf");
    w.set_string("t.empty", "");
    const GgufFile f = GgufFile::from_bytes(write_to_bytes(w));

    EXPECT_EQ(f.version(), 3u);
    EXPECT_EQ(f.alignment(), 32u);
    ASSERT_EQ(f.kvs().size(), 14u);
    EXPECT_EQ(f.kvs()[0].key, "t.u8");
    EXPECT_EQ(f.kv("t.u8").type, GgufType::U8);
    EXPECT_EQ(f.get_u8("t.u8"), 200);
    EXPECT_EQ(f.get_u32("t.u8"), 200u);  // widened
    EXPECT_EQ(f.get_i32("t.i8"), -100);
    EXPECT_EQ(f.get_u32("t.u16"), 60000u);
    EXPECT_EQ(f.get_i32("t.i16"), -30000);
    EXPECT_EQ(f.get_u32("t.u32"), 4000000000u);
    EXPECT_EQ(f.get_i64("t.u32"), 4000000000);
    EXPECT_EQ(f.get_i32("t.i32"), -2000000000);
    EXPECT_EQ(f.get_u64("t.u64"), 0xfedcba9876543210ULL);
    EXPECT_EQ(f.get_i64("t.i64"), INT64_MIN + 1);
    EXPECT_EQ(f.get_f32("t.f32"), 1.5f);
    EXPECT_EQ(f.get_f64("t.f32"), 1.5);
    EXPECT_EQ(f.get_f64("t.f64"), -2.25);
    EXPECT_EQ(f.get_f32("t.f64"), -2.25f);
    EXPECT_TRUE(f.get_bool("t.true"));
    EXPECT_FALSE(f.get_bool("t.false"));
    EXPECT_EQ(f.get_string("t.str"), "hello, gguf");
    EXPECT_EQ(f.get_string("t.empty"), "");
    EXPECT_EQ(f.find_u32("t.missing"), std::nullopt);
    EXPECT_EQ(f.find_string("t.str"), "hello, gguf");
    EXPECT_EQ(f.tensors().size(), 0u);
}

TEST(GgufRoundTrip, EveryArrayType)
{
    GgufWriter w;
    const int32_t i32s[] = {-1, 0, 7, INT32_MAX};
    const uint32_t u32s[] = {1, 2, 3};
    const float f32s[] = {0.5f, -1.0f, 3.25f};
    const std::vector<std::string> strs = {"a", "", "a longer string with spaces", "ü"};
    w.set_array_i32("a.i32", i32s);
    w.set_array_u32("a.u32", u32s);
    w.set_array_f32("a.f32", f32s);
    w.set_string_array("a.str", strs);
    const uint8_t u8s[] = {0, 255};
    const int8_t i8s[] = {-128, 127};
    const uint16_t u16s[] = {65535};
    const int16_t i16s[] = {-32768, 1};
    const uint64_t u64s[] = {UINT64_MAX >> 1, 5};
    const int64_t i64s[] = {INT64_MIN, -3};
    const double f64s[] = {1e300, -0.125};
    const uint8_t bools[] = {1, 0, 1};
    w.set_array("a.u8", GgufType::U8, 2, std::as_bytes(std::span(u8s)));
    w.set_array("a.i8", GgufType::I8, 2, std::as_bytes(std::span(i8s)));
    w.set_array("a.u16", GgufType::U16, 1, std::as_bytes(std::span(u16s)));
    w.set_array("a.i16", GgufType::I16, 2, std::as_bytes(std::span(i16s)));
    w.set_array("a.u64", GgufType::U64, 2, std::as_bytes(std::span(u64s)));
    w.set_array("a.i64", GgufType::I64, 2, std::as_bytes(std::span(i64s)));
    w.set_array("a.f64", GgufType::F64, 2, std::as_bytes(std::span(f64s)));
    w.set_array("a.bool", GgufType::BOOL, 3, std::as_bytes(std::span(bools)));
    w.set_array("a.empty", GgufType::U32, 0, {});
    const GgufFile f = GgufFile::from_bytes(write_to_bytes(w));

    EXPECT_EQ(f.get_int_array("a.i32"), (std::vector<int64_t>{-1, 0, 7, INT32_MAX}));
    EXPECT_EQ(f.get_int_array("a.u32"), (std::vector<int64_t>{1, 2, 3}));
    EXPECT_EQ(f.get_f32_array("a.f32"), (std::vector<float>{0.5f, -1.0f, 3.25f}));
    const auto s = f.get_string_array("a.str");
    ASSERT_EQ(s.size(), strs.size());
    for (size_t i = 0; i < s.size(); ++i) EXPECT_EQ(s[i], strs[i]);
    EXPECT_EQ(f.get_int_array("a.u8"), (std::vector<int64_t>{0, 255}));
    EXPECT_EQ(f.get_int_array("a.i8"), (std::vector<int64_t>{-128, 127}));
    EXPECT_EQ(f.get_int_array("a.u16"), (std::vector<int64_t>{65535}));
    EXPECT_EQ(f.get_int_array("a.i16"), (std::vector<int64_t>{-32768, 1}));
    EXPECT_EQ(f.get_int_array("a.u64"), (std::vector<int64_t>{INT64_MAX, 5}));
    EXPECT_EQ(f.get_int_array("a.i64"), (std::vector<int64_t>{INT64_MIN, -3}));
    EXPECT_EQ(f.get_f32_array("a.f64"), (std::vector<float>{static_cast<float>(1e300), -0.125f}));
    EXPECT_EQ(f.kv("a.bool").elem_type, GgufType::BOOL);
    EXPECT_EQ(f.array_size("a.bool"), 3u);
    EXPECT_EQ(f.array_size("a.empty"), 0u);
    EXPECT_TRUE(f.get_int_array("a.empty").empty());
}

TEST(GgufRoundTrip, EveryTensorTypeAndAlignment)
{
    for (uint32_t alignment : {32u, 64u, 4096u}) {
        SCOPED_TRACE(alignment);
        GgufWriter w(alignment);
        w.set_string("general.name", "tensors");
        struct T {
            std::string name;
            TensorType type;
            std::vector<uint64_t> ne;
        };
        const std::vector<T> ts = {
            {"f32", TensorType::F32, {3}},
            {"f16", TensorType::F16, {5, 3}},
            {"bf16", TensorType::BF16, {7, 2, 2}},
            {"q8_0", TensorType::Q8_0, {64, 3}},
            {"mxfp4", TensorType::MXFP4, {32, 3, 2}},
            {"q4_0", TensorType::Q4_0, {32}},
            {"q4_1", TensorType::Q4_1, {32, 1, 1, 2}},
            {"q5_0", TensorType::Q5_0, {32}},
            {"q5_1", TensorType::Q5_1, {32}},
            {"q8_1", TensorType::Q8_1, {32}},
            {"i8", TensorType::I8, {9}},
            {"i16", TensorType::I16, {9}},
            {"i32", TensorType::I32, {9}},
            {"i64", TensorType::I64, {9}},
            {"f64", TensorType::F64, {9}},
        };
        for (const T& t : ts) w.add_tensor(t.name, t.type, t.ne);
        const uint64_t expected_size = w.file_size();
        const GgufFile f = GgufFile::from_bytes(write_to_bytes(w, pattern));
        EXPECT_EQ(f.bytes().size(), expected_size);
        EXPECT_EQ(f.alignment(), alignment);
        if (alignment != 32) {
            EXPECT_EQ(f.get_u32("general.alignment"), alignment);
        }
        EXPECT_EQ(f.data_section_offset() % alignment, 0u);
        ASSERT_EQ(f.tensors().size(), ts.size());
        for (size_t i = 0; i < ts.size(); ++i) {
            const GgufTensor& t = f.tensor(ts[i].name);
            EXPECT_EQ(&t, &f.tensors()[i]);
            EXPECT_EQ(t.type, ts[i].type);
            ASSERT_EQ(t.shape().size(), ts[i].ne.size());
            uint64_t n = 1;
            for (size_t d = 0; d < ts[i].ne.size(); ++d) {
                EXPECT_EQ(t.shape()[d], ts[i].ne[d]);
                n *= ts[i].ne[d];
            }
            EXPECT_EQ(t.n_elements, n);
            EXPECT_EQ(t.data.size(), tensor_bytes(ts[i].type, n));
            EXPECT_EQ(t.data_offset % alignment, 0u);
            const auto want = pattern(i, t.data.size());
            EXPECT_TRUE(std::equal(want.begin(), want.end(), t.data.begin())) << ts[i].name;
        }
        EXPECT_EQ(f.tensor("mxfp4").data.size(), 6u * 17u);
        EXPECT_EQ(f.tensor("q8_0").data.size(), 6u * 34u);
        EXPECT_EQ(f.tensor("bf16").shape_string(), "[7, 2, 2]");
    }
}

TEST(GgufRoundTrip, OpenReadsAFile)
{
    GgufWriter w;
    w.set_u32("x", 1);
    const uint64_t ne[] = {32, 2};
    w.add_tensor("w", TensorType::Q8_0, ne);
    const auto bytes = write_to_bytes(w, pattern);
    const std::string path =
        ::testing::TempDir() + "gguf_roundtrip_" + std::to_string(getpid()) + ".gguf";
    {
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()),
                  static_cast<std::streamsize>(bytes.size()));
    }
    {
        const GgufFile f = GgufFile::open(path);
        EXPECT_EQ(f.name(), path);
        EXPECT_EQ(f.get_u32("x"), 1u);
        EXPECT_EQ(f.tensor("w").data.size(), 68u);
        EXPECT_EQ(static_cast<uint8_t>(f.tensor("w").data[0]), 1);
    }
    std::filesystem::remove(path);
    expect_error([&] { GgufFile::open(path); }, JAL_STATUS_IO_ERROR, {path, "cannot open"});
}

TEST(GgufRoundTrip, AFileTruncatedAfterOpenStillReadsWhatWasThere)
{
    // Another process truncating (or rewriting) the model file while it is in use must not
    // kill the reader with SIGBUS, as an access through a mapping of the file would.
    GgufWriter w;
    const uint64_t ne[] = {32, 64};
    w.add_tensor("w", TensorType::F32, ne);
    const auto bytes = write_to_bytes(w, pattern);
    const std::string path =
        ::testing::TempDir() + "gguf_truncated_" + std::to_string(getpid()) + ".gguf";
    {
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()),
                  static_cast<std::streamsize>(bytes.size()));
    }
    const GgufFile f = GgufFile::open(path);
    ASSERT_EQ(::truncate(path.c_str(), 16), 0);
    const auto data = f.tensor("w").data;
    ASSERT_EQ(data.size(), 32u * 64 * 4);
    EXPECT_TRUE(std::equal(data.begin(), data.end(),
                           bytes.begin() + static_cast<std::ptrdiff_t>(f.tensor("w").data_offset)))
        << "the bytes read at open";
    std::filesystem::remove(path);
}

TEST(GgufRoundTrip, AFifoIsRefusedWithoutBlocking)
{
    // open() of a FIFO with no writer would block forever; the model loader refuses it.
    const std::string path =
        ::testing::TempDir() + "gguf_fifo_" + std::to_string(getpid()) + ".gguf";
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << std::strerror(errno);
    expect_error([&] { GgufFile::open(path); }, JAL_STATUS_IO_ERROR, {path, "not a regular file"});
    std::filesystem::remove(path);
    expect_error([&] { GgufFile::open("/dev/null"); }, JAL_STATUS_IO_ERROR,
                 {"/dev/null", "not a regular file"});
}

TEST(GgufRoundTrip, TypedGettersNameKeyAndTypes)
{
    GgufWriter w;
    w.set_string("s", "text");
    w.set_i32("neg", -5);
    w.set_u64("big", 1ULL << 40);
    const uint32_t arr[] = {1};
    w.set_array_u32("arr", arr);
    const GgufFile f = GgufFile::from_bytes(write_to_bytes(w), "types.gguf");
    expect_error([&] { f.get_u32("s"); }, JAL_STATUS_INVALID_FIELD,
                 {"types.gguf", "key 's'", "offset 24",
                  "expected an unsigned 32-bit integer, found string"});
    expect_error([&] { f.get_u32("neg"); }, JAL_STATUS_INVALID_FIELD,
                 {"key 'neg'", "value -5 does not fit"});
    expect_error([&] { f.get_u32("big"); }, JAL_STATUS_INVALID_FIELD,
                 {"key 'big'", "value 1099511627776"});
    expect_error([&] { f.get_string("arr"); }, JAL_STATUS_INVALID_FIELD,
                 {"key 'arr'", "found array of 1 u32"});
    expect_error([&] { f.get_f32_array("arr"); }, JAL_STATUS_INVALID_FIELD,
                 {"expected array of f32"});
    expect_error([&] { f.get_bool("nope"); }, JAL_STATUS_INVALID_FIELD, {"missing key 'nope'"});
    expect_error([&] { f.tensor("nope"); }, JAL_STATUS_INVALID_FIELD, {"missing tensor 'nope'"});
    expect_error([&] { f.find_u32("s"); }, JAL_STATUS_INVALID_FIELD, {"found string"});
}

TEST(GgufWriter, RefusesWhatItCannotWrite)
{
    GgufWriter w;
    w.set_u32("k", 1);
    expect_error([&] { w.set_u32("k", 2); }, JAL_STATUS_INVALID_FIELD, {"duplicate key 'k'"});
    const uint64_t bad_row[] = {33};
    expect_error([&] { w.add_tensor("q", TensorType::Q8_0, bad_row); }, JAL_STATUS_INVALID_LENGTH,
                 {"'q'", "33"});
    const uint64_t five[] = {1, 1, 1, 1, 1};
    expect_error([&] { w.add_tensor("five", TensorType::F32, five); }, JAL_STATUS_INVALID_FIELD,
                 {"5 dimensions"});
    const uint64_t ok[] = {4};
    w.add_tensor("a", TensorType::F32, ok);
    expect_error([&] { w.add_tensor("a", TensorType::F32, ok); }, JAL_STATUS_INVALID_FIELD,
                 {"duplicate tensor 'a'"});
    expect_error([&] { w.add_tensor(std::string(64, 'n'), TensorType::F32, ok); },
                 JAL_STATUS_INVALID_LENGTH, {"1..63 bytes"});
    expect_error([] { GgufWriter bad(48); }, JAL_STATUS_INVALID_FIELD, {"alignment 48"});

    std::ostringstream out;
    w.begin(out);
    expect_error([&] { w.write_tensor(std::vector<std::byte>(15)); }, JAL_STATUS_INVALID_LENGTH,
                 {"'a' needs 16 bytes, got 15"});
    expect_error([&] { w.finish(); }, JAL_STATUS_INVALID_FIELD, {"0 of 1 tensors written", "'a'"});
    w.write_tensor_part(std::vector<std::byte>(10));
    expect_error([&] { w.write_tensor_part(std::vector<std::byte>(7)); }, JAL_STATUS_INVALID_LENGTH,
                 {"'a' has 16 bytes; 10 written, 7 more"});
    w.write_tensor_part(std::vector<std::byte>(6));
    w.finish();
    EXPECT_EQ(out.str().size(), w.file_size());
}

}  // namespace
}  // namespace jal::model::test
