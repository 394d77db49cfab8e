// What a GgufFile holds: the bytes (owned) and the validated descriptions that
// point into them. Shared by the parser, the accessors and the file opener.
#pragma once

#include <jal/model/gguf.hpp>

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace jal::model {

struct JAL_HIDDEN GgufFile::Impl {
    std::string name;
    std::vector<std::byte> owned;  // the file's bytes (open reads them all: see read_regular_file)
    std::span<const std::byte> bytes;

    uint32_t version = 0;
    uint32_t alignment = kGgufDefaultAlignment;
    uint64_t data_offset = 0;
    std::vector<GgufKv> kvs;
    std::vector<GgufTensor> tensors;
    std::unordered_map<std::string_view, size_t> kv_index;
    std::unordered_map<std::string_view, size_t> tensor_index;

    Impl() = default;
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    ~Impl();
};

// Validates impl.bytes and fills in everything else; throws jal::Error.
void parse_gguf(GgufFile::Impl& impl);

}  // namespace jal::model
