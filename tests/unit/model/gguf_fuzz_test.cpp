// Random mutations of a valid synthetic model: the reader and the GPT-OSS and DeepSeek-V3
// checks must either accept the file or throw jal::Error, never crash or read outside it
// (run under ASan).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <unistd.h>

#include <jal/model/deepseek_config.hpp>
#include <jal/model/gpt_oss_config.hpp>

#include "deepseek_test_util.hpp"
#include "gguf_test_util.hpp"

namespace jal::model::test {
namespace {

std::vector<std::byte> micro_model_bytes()
{
    const std::string path =
        ::testing::TempDir() + "gguf_fuzz_" + std::to_string(getpid()) + ".gguf";
    SyntheticGptOssOptions o = micro_options();
    o.seed = 3;
    write_synthetic_gpt_oss(path, o);
    std::ifstream in(path, std::ios::binary);
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::filesystem::remove(path);
    std::vector<std::byte> bytes(chars.size());
    std::memcpy(bytes.data(), chars.data(), chars.size());
    return bytes;
}

// Every kind of pair (string arrays included) and a few tensor types.
std::vector<std::byte> rich_file_bytes()
{
    GgufWriter w(64);
    w.set_string("general.name", "rich");
    w.set_u8("u8", 1);
    w.set_i16("i16", -2);
    w.set_u64("u64", 3);
    w.set_f64("f64", 4.5);
    w.set_bool("bool", true);
    const std::vector<std::string> tokens = {"<s>", "hello", "", "world"};
    w.set_string_array("tokens", tokens);
    const int32_t ints[] = {1, -2, 3};
    w.set_array_i32("ints", ints);
    const float floats[] = {0.5f, 1.5f};
    w.set_array_f32("floats", floats);
    const uint8_t bools[] = {0, 1};
    w.set_array("bools", GgufType::BOOL, 2, std::as_bytes(std::span(bools)));
    const uint64_t a[] = {64, 2}, b[] = {32, 2, 2}, c[] = {5};
    w.add_tensor("q", TensorType::Q8_0, a);
    w.add_tensor("m", TensorType::MXFP4, b);
    w.add_tensor("h", TensorType::F16, c);
    return write_to_bytes(w);
}

// Everything a consumer might touch in an accepted file.
void use_any(const GgufFile& f)
{
    for (const GgufKv& kv : f.kvs()) {
        if (kv.type == GgufType::STRING)
            (void)f.get_string(kv.key);
        else if (kv.type == GgufType::ARRAY && kv.elem_type == GgufType::STRING)
            (void)f.get_string_array(kv.key);
        else if (kv.type == GgufType::ARRAY &&
                 (kv.elem_type == GgufType::F32 || kv.elem_type == GgufType::F64))
            (void)f.get_f32_array(kv.key);
        else if (kv.type == GgufType::ARRAY && kv.elem_type != GgufType::BOOL) {
            try {
                (void)f.get_int_array(kv.key);
            } catch (const Error&) {  // a u64 beyond int64 is reported, not wrapped
            }
        }
    }
    unsigned sum = 0;
    for (const GgufTensor& t : f.tensors())
        for (std::byte b : t.data) sum += static_cast<unsigned>(b);
    (void)sum;
}

void use_model(const GgufFile& f)
{
    use_any(f);
    (void)read_gpt_oss_config(f);
}

void use_deepseek_model(const GgufFile& f)
{
    use_any(f);
    (void)read_deepseek_config(f);
}

// Mutates `valid` in `seeds` ways; every result must be accepted or rejected with a
// jal::Error that names the file.
void fuzz(const std::vector<std::byte>& valid, const std::function<void(const GgufFile&)>& use,
          int seeds)
{
    const GgufFile original = GgufFile::from_bytes(valid);
    ASSERT_NO_THROW(use(original));
    const size_t meta = original.data_section_offset();

    int accepted = 0, rejected = 0;
    for (int seed = 0; seed < seeds; ++seed) {
        std::mt19937_64 rng(seed);
        std::vector<std::byte> bytes = valid;
        auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
        switch (seed % 4) {
        case 0:  // a few bytes of the metadata
            for (size_t i = 0, n = 1 + pick(8); i < n; ++i)
                bytes[pick(meta)] = static_cast<std::byte>(rng());
            break;
        case 1:  // truncation
            bytes.resize(pick(bytes.size()));
            break;
        case 2: {  // an extreme 64-bit value over a count, length, dimension or offset
            static const uint64_t extremes[] = {
                0,          1,          31,         32,         UINT32_MAX,     1ULL << 31,
                1ULL << 32, 1ULL << 62, 1ULL << 63, UINT64_MAX, UINT64_MAX - 31};
            const uint64_t v =
                extremes[pick(std::size(extremes))] + (rng() % 3 == 0 ? rng() % 64 : 0);
            std::memcpy(bytes.data() + pick(meta - 8), &v, 8);
            break;
        }
        default:  // anywhere, including tensor data
            for (size_t i = 0, n = 1 + pick(32); i < n; ++i)
                bytes[pick(bytes.size())] ^= static_cast<std::byte>(1u << pick(8));
            break;
        }
        try {
            const GgufFile f = GgufFile::from_bytes(std::move(bytes), "fuzz.gguf");
            use(f);
            ++accepted;
        } catch (const Error& e) {
            const std::string msg = e.what();
            EXPECT_TRUE(e.status() == JAL_STATUS_INVALID_FIELD ||
                        e.status() == JAL_STATUS_INVALID_LENGTH)
                << msg;
            EXPECT_EQ(msg.rfind("fuzz.gguf: ", 0), 0u) << msg;
            ++rejected;
        }
    }
    EXPECT_EQ(accepted + rejected, seeds);
    EXPECT_GT(rejected, seeds / 4);  // the mutations do reach the checks
    std::printf("%d mutations: %d accepted, %d rejected\n", seeds, accepted, rejected);
}

TEST(GgufFuzz, MutatedModelsNeverCrash)
{
    fuzz(micro_model_bytes(), use_model, 3000);
}

TEST(GgufFuzz, MutatedDeepseekModelsNeverCrash)
{
    fuzz(deepseek_bytes(deepseek_micro_options()), use_deepseek_model, 3000);
}

TEST(GgufFuzz, MutatedFilesWithEveryPairTypeNeverCrash)
{
    fuzz(rich_file_bytes(), use_any, 3000);
}

}  // namespace
}  // namespace jal::model::test
