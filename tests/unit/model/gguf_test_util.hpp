// Helpers for the GGUF tests: files built in memory, by the writer or byte by byte.
#pragma once

#include "common/expect_error.hpp"

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <jal/model/gguf.hpp>
#include <jal/model/synthetic_gpt_oss.hpp>

namespace jal::model::test {

// Runs a writer whose pairs and tensors are declared into memory; tensor i's data is
// data(i, its size), or zeros.
std::vector<std::byte>
write_to_bytes(GgufWriter& w,
               std::function<std::vector<std::byte>(size_t index, uint64_t bytes)> data = {});

// A GGUF file written byte by byte, for layouts the writer refuses to produce.
class RawGguf {
public:
    RawGguf& u8(uint8_t v) { return put(v); }
    RawGguf& u32(uint32_t v) { return put(v); }
    RawGguf& u64(uint64_t v) { return put(v); }
    RawGguf& f32(float v) { return put(v); }
    RawGguf& str(std::string_view s)
    {
        u64(s.size());
        for (char c : s) bytes_.push_back(static_cast<std::byte>(c));
        return *this;
    }
    RawGguf& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3)
    {
        return u32(kGgufMagic).u32(version).u64(n_tensors).u64(n_kv);
    }
    // A tensor description.
    RawGguf& tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset)
    {
        str(name).u32(static_cast<uint32_t>(ne.size()));
        for (uint64_t d : ne) u64(d);
        return u32(type).u64(offset);
    }
    // Zero bytes up to the next multiple of `a`.
    RawGguf& pad(size_t a = kGgufDefaultAlignment)
    {
        while (bytes_.size() % a) bytes_.push_back(std::byte{0});
        return *this;
    }
    RawGguf& zeros(size_t n)
    {
        bytes_.resize(bytes_.size() + n);
        return *this;
    }
    size_t size() const { return bytes_.size(); }
    std::vector<std::byte> bytes() const { return bytes_; }

private:
    template <typename T>
    RawGguf& put(T v)
    {
        const auto* p = reinterpret_cast<const std::byte*>(&v);
        bytes_.insert(bytes_.end(), p, p + sizeof v);
        return *this;
    }
    std::vector<std::byte> bytes_;
};

// The smallest useful GPT-OSS shape (one layer, two experts).
SyntheticGptOssOptions micro_options();

// A GPT-OSS file in memory from `options`, with zero weights, and hooks to break it.
struct GptOssEdits {
    std::string drop_key;        // leave this key out
    std::string string_key;      // write this key as a string "oops"
    std::string drop_tensor;     // leave this tensor out
    std::string retype_tensor;   // write this tensor as F16
    std::string reshape_tensor;  // add 1 to its first dimension... (blocks: 32)
    std::string extra_tensor;    // add this tensor (f32 [32])
    std::function<void(GgufWriter&)> extra_keys;
    std::string architecture = "gpt-oss";
};
std::vector<std::byte> gpt_oss_bytes(const SyntheticGptOssOptions& options,
                                     const GptOssEdits& edits = {});

using jal::test::expect_error;  // tests/common/expect_error.hpp

}  // namespace jal::model::test
