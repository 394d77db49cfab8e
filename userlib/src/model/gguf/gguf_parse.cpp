// Validation of a GGUF file's structure: header, key/value pairs, tensor descriptions and
// the placement of the tensor data. Every length and count read from the file is checked
// against the bytes that remain before it is used, so nothing is allocated or read beyond
// the end for any input.
#include "gguf_file_impl.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <numeric>

namespace jal::model {

namespace {

// Smallest encodings, to bound counts by the bytes that remain: a pair is a key length, a
// type and a one-byte value; a tensor description a name length, n_dims, one dimension, a
// type and an offset.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

class Cursor {
public:
    Cursor(std::span<const std::byte> bytes, const std::string& file) : bytes_(bytes), file_(file)
    {}

    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return bytes_.size() - pos_; }

    // `what` describes the item being read, e.g. "key 'general.name'".
    void need(uint64_t n, std::string_view what, std::string_view item) const
    {
        if (n > remaining())
            throw Error(JAL_STATUS_INVALID_LENGTH,
                        fmt::format("{}: {} at offset {}: {} needs {} bytes but only {} remain "
                                    "(file of {} bytes is truncated)",
                                    file_, what, pos_, item, n, remaining(), bytes_.size()));
    }

    template <typename T>
    T read(std::string_view what, std::string_view item)
    {
        need(sizeof(T), what, item);
        T v;
        std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    std::span<const std::byte> take(uint64_t n, std::string_view what, std::string_view item)
    {
        need(n, what, item);
        auto s = bytes_.subspan(pos_, n);
        pos_ += n;
        return s;
    }

    std::string_view read_string(std::string_view what, std::string_view item)
    {
        const uint64_t start = pos_;
        const auto len = read<uint64_t>(what, fmt::format("the length of {}", item));
        if (len > remaining())
            throw Error(
                JAL_STATUS_INVALID_LENGTH,
                fmt::format("{}: {} at offset {}: {} has length {} but only {} bytes remain", file_,
                            what, start, item, len, remaining()));
        auto s = take(len, what, item);
        return {reinterpret_cast<const char*>(s.data()), s.size()};
    }

    [[noreturn]] void fail(jal_status status, std::string_view what, uint64_t at,
                           const std::string& msg) const
    {
        throw Error(status, fmt::format("{}: {} at offset {}: {}", file_, what, at, msg));
    }

private:
    std::span<const std::byte> bytes_;
    const std::string& file_;
    uint64_t pos_ = 0;
};

bool valid_gguf_type(uint32_t t)
{
    return t <= static_cast<uint32_t>(GgufType::F64);
}

// Reads one value of `type` (not ARRAY) and returns its bytes (a string's characters).
std::span<const std::byte> read_scalar_or_string(Cursor& c, GgufType type, const std::string& what)
{
    const uint64_t at = c.pos();
    if (type == GgufType::STRING) {
        std::string_view s = c.read_string(what, "the string value");
        return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
    }
    auto v = c.take(gguf_type_size(type), what, fmt::format("the {} value", gguf_type_name(type)));
    if (type == GgufType::BOOL && static_cast<uint8_t>(v[0]) > 1)
        c.fail(JAL_STATUS_INVALID_FIELD, what, at,
               fmt::format("bool value {}, expected 0 or 1", static_cast<unsigned>(v[0])));
    return v;
}

void parse_kv(Cursor& c, GgufFile::Impl& impl, uint64_t index)
{
    const uint64_t at = c.pos();
    const std::string pair = fmt::format("key/value pair {}", index);
    std::string_view key = c.read_string(pair, "the key");
    if (key.empty()) c.fail(JAL_STATUS_INVALID_FIELD, pair, at, "empty key");
    const std::string what = fmt::format("key '{}'", key);
    if (impl.kv_index.count(key)) c.fail(JAL_STATUS_INVALID_FIELD, what, at, "duplicate key");

    const uint64_t type_at = c.pos();
    const auto type_id = c.read<uint32_t>(what, "the value type");
    if (!valid_gguf_type(type_id))
        c.fail(JAL_STATUS_INVALID_FIELD, what, type_at,
               fmt::format("value type {}, expected 0..12 (gguf_type)", type_id));
    GgufKv kv{key, static_cast<GgufType>(type_id), static_cast<GgufType>(type_id), 1, at, {}};

    if (kv.type != GgufType::ARRAY) {
        kv.value = read_scalar_or_string(c, kv.type, what);
    } else {
        const uint64_t elem_at = c.pos();
        const auto elem_id = c.read<uint32_t>(what, "the array element type");
        if (!valid_gguf_type(elem_id))
            c.fail(JAL_STATUS_INVALID_FIELD, what, elem_at,
                   fmt::format("array element type {}, expected 0..12 (gguf_type)", elem_id));
        kv.elem_type = static_cast<GgufType>(elem_id);
        if (kv.elem_type == GgufType::ARRAY)
            c.fail(JAL_STATUS_INVALID_FIELD, what, elem_at,
                   "array of arrays, which GGUF does not support");
        const uint64_t count_at = c.pos();
        kv.count = c.read<uint64_t>(what, "the array length");
        // Bound the count by the remaining bytes before touching any element.
        const uint64_t min_elem =
            kv.elem_type == GgufType::STRING ? 8 : gguf_type_size(kv.elem_type);
        if (kv.count > c.remaining() / min_elem)
            c.fail(JAL_STATUS_INVALID_LENGTH, what, count_at,
                   fmt::format(
                       "array of {} {} elements needs at least {} bytes per element but only {} "
                       "bytes remain",
                       kv.count, gguf_type_name(kv.elem_type), min_elem, c.remaining()));
        const uint64_t start = c.pos();
        if (kv.elem_type == GgufType::STRING) {
            for (uint64_t i = 0; i < kv.count; ++i)
                c.read_string(what, fmt::format("string element {}", i));
        } else {
            c.take(kv.count * min_elem, what, "the array elements");
            if (kv.elem_type == GgufType::BOOL) {
                for (uint64_t i = 0; i < kv.count; ++i) {
                    const auto b = static_cast<uint8_t>(impl.bytes[start + i]);
                    if (b > 1)
                        c.fail(JAL_STATUS_INVALID_FIELD, what, start + i,
                               fmt::format("bool element {} is {}, expected 0 or 1", i, b));
                }
            }
        }
        kv.value = impl.bytes.subspan(start, c.pos() - start);
    }
    impl.kv_index.emplace(key, impl.kvs.size());
    impl.kvs.push_back(kv);
}

void read_alignment(Cursor& c, GgufFile::Impl& impl)
{
    auto it = impl.kv_index.find("general.alignment");
    if (it == impl.kv_index.end()) return;
    const GgufKv& kv = impl.kvs[it->second];
    if (kv.type != GgufType::U32)
        c.fail(JAL_STATUS_INVALID_FIELD, "key 'general.alignment'", kv.offset,
               fmt::format("type {}, expected u32", gguf_type_name(kv.type)));
    uint32_t a;
    std::memcpy(&a, kv.value.data(), 4);
    if (a == 0 || (a & (a - 1)) != 0)
        c.fail(JAL_STATUS_INVALID_FIELD, "key 'general.alignment'", kv.offset,
               fmt::format("alignment {}, expected a non-zero power of two", a));
    impl.alignment = a;
}

void parse_tensor_info(Cursor& c, GgufFile::Impl& impl, uint64_t index)
{
    const uint64_t at = c.pos();
    const std::string desc = fmt::format("tensor description {}", index);
    std::string_view name = c.read_string(desc, "the tensor name");
    if (name.empty()) c.fail(JAL_STATUS_INVALID_FIELD, desc, at, "empty tensor name");
    const std::string what = fmt::format("tensor '{}'", name);
    if (name.size() > kGgufMaxTensorName)
        c.fail(
            JAL_STATUS_INVALID_LENGTH, what, at,
            fmt::format("name of {} bytes, expected at most {}", name.size(), kGgufMaxTensorName));
    if (impl.tensor_index.count(name))
        c.fail(JAL_STATUS_INVALID_FIELD, what, at, "duplicate tensor name");

    GgufTensor t{};
    t.name = name;
    t.info_offset = at;
    const uint64_t dims_at = c.pos();
    t.n_dims = c.read<uint32_t>(what, "n_dims");
    if (t.n_dims == 0 || t.n_dims > kGgufMaxDims)
        c.fail(JAL_STATUS_INVALID_FIELD, what, dims_at,
               fmt::format("n_dims {}, expected 1..{}", t.n_dims, kGgufMaxDims));
    t.ne.fill(1);
    uint64_t elements = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
        const uint64_t ne_at = c.pos();
        const auto ne = c.read<uint64_t>(what, fmt::format("dimension {}", d));
        if (ne == 0)
            c.fail(JAL_STATUS_INVALID_FIELD, what, ne_at,
                   fmt::format("dimension {} is 0, expected at least 1", d));
        // ggml keeps dimensions and element counts in int64_t.
        if (ne > static_cast<uint64_t>(INT64_MAX) / elements)
            c.fail(
                JAL_STATUS_INVALID_LENGTH, what, ne_at,
                fmt::format("dimension {} of {} makes the element count overflow 63 bits", d, ne));
        t.ne[d] = ne;
        elements *= ne;
    }
    t.n_elements = elements;

    const uint64_t type_at = c.pos();
    const auto type_id = c.read<uint32_t>(what, "the tensor type");
    const TensorTypeInfo* info = find_tensor_type(type_id);
    if (!info)
        c.fail(JAL_STATUS_INVALID_FIELD, what, type_at,
               fmt::format(
                   "tensor type {}, expected a known ggml type (f32 0, f16 1, q8_0 8, bf16 30, "
                   "mxfp4 39, ...)",
                   type_id));
    t.type = info->type;
    if (t.ne[0] % info->block_elements != 0)
        c.fail(JAL_STATUS_INVALID_LENGTH, what, dims_at,
               fmt::format("row of {} elements is not a whole number of {}-element {} blocks",
                           t.ne[0], info->block_elements, info->name));

    const uint64_t off_at = c.pos();
    const auto rel = c.read<uint64_t>(what, "the data offset");
    // The data offset is checked once the data section's start is known; keep it here.
    t.data_offset = rel;
    (void)off_at;
    impl.tensor_index.emplace(name, impl.tensors.size());
    impl.tensors.push_back(t);
}

void place_tensor_data(Cursor& c, GgufFile::Impl& impl)
{
    const uint64_t size = impl.bytes.size();
    for (GgufTensor& t : impl.tensors) {
        const std::string what = fmt::format("tensor '{}'", t.name);
        const TensorTypeInfo& info = tensor_type_info(t.type);
        const uint64_t rel = t.data_offset;
        if (rel % impl.alignment != 0)
            c.fail(JAL_STATUS_INVALID_FIELD, what, t.info_offset,
                   fmt::format("data offset {} is not a multiple of the alignment {}", rel,
                               impl.alignment));
        // bytes = elements / block * block_bytes; the element count is below 2^63 so the
        // block count times at most 36 bytes could still overflow: check against the file.
        const uint64_t blocks = t.n_elements / info.block_elements;
        if (blocks > size / info.block_bytes)
            c.fail(JAL_STATUS_INVALID_LENGTH, what, t.info_offset,
                   fmt::format("shape {} of type {} needs more bytes than the whole file ({})",
                               t.shape_string(), info.name, size));
        const uint64_t bytes = blocks * info.block_bytes;
        const uint64_t avail = size - impl.data_offset;
        if (rel > avail || bytes > avail - rel)
            c.fail(JAL_STATUS_INVALID_LENGTH, what, t.info_offset,
                   fmt::format(
                       "data at offset {} (data section + {}) of {} bytes ends past the end of the "
                       "file ({} bytes)",
                       impl.data_offset + rel, rel, bytes, size));
        t.data_offset = impl.data_offset + rel;
        t.data = impl.bytes.subspan(t.data_offset, bytes);
    }

    // No two tensors may share bytes.
    std::vector<size_t> order(impl.tensors.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return impl.tensors[a].data_offset < impl.tensors[b].data_offset;
    });
    for (size_t i = 1; i < order.size(); ++i) {
        const GgufTensor& prev = impl.tensors[order[i - 1]];
        const GgufTensor& t = impl.tensors[order[i]];
        if (t.data_offset < prev.data_offset + prev.data.size())
            c.fail(JAL_STATUS_INVALID_FIELD, fmt::format("tensor '{}'", t.name), t.info_offset,
                   fmt::format("data at offset {} overlaps tensor '{}' (offset {}, {} bytes)",
                               t.data_offset, prev.name, prev.data_offset, prev.data.size()));
    }
}

}  // namespace

void parse_gguf(GgufFile::Impl& impl)
{
    Cursor c(impl.bytes, impl.name);
    const auto magic = c.read<uint32_t>("header", "the magic");
    if (magic != kGgufMagic)
        c.fail(JAL_STATUS_INVALID_FIELD, "header", 0,
               fmt::format("magic 0x{:08x}, expected 0x{:08x} (\"GGUF\")", magic, kGgufMagic));
    impl.version = c.read<uint32_t>("header", "the version");
    if (impl.version != 2 && impl.version != 3) {
        const bool swapped = (impl.version & 0xffff) == 0 && impl.version != 0;
        c.fail(JAL_STATUS_INVALID_FIELD, "header", 4,
               fmt::format("version {}, expected 2 or 3{}", impl.version,
                           swapped             ? " (a big-endian file?)"
                           : impl.version == 1 ? " (version 1 is obsolete)"
                                               : ""));
    }
    const auto n_tensors = c.read<uint64_t>("header", "the tensor count");
    const auto n_kv = c.read<uint64_t>("header", "the key/value count");
    if (n_kv > c.remaining() / kMinKvBytes)
        c.fail(
            JAL_STATUS_INVALID_LENGTH, "header", 16,
            fmt::format("key/value count {} needs at least {} bytes each but only {} bytes remain",
                        n_kv, kMinKvBytes, c.remaining()));
    if (n_tensors > (c.remaining() - n_kv * kMinKvBytes) / kMinTensorInfoBytes)
        c.fail(JAL_STATUS_INVALID_LENGTH, "header", 8,
               fmt::format("tensor count {} needs at least {} bytes each but only {} bytes remain",
                           n_tensors, kMinTensorInfoBytes, c.remaining()));

    impl.kvs.reserve(n_kv);
    for (uint64_t i = 0; i < n_kv; ++i) parse_kv(c, impl, i);
    read_alignment(c, impl);

    impl.tensors.reserve(n_tensors);
    for (uint64_t i = 0; i < n_tensors; ++i) parse_tensor_info(c, impl, i);

    // The data section starts at the next multiple of the alignment.
    const uint64_t a = impl.alignment;
    const uint64_t end_of_infos = c.pos();
    impl.data_offset = (end_of_infos + a - 1) / a * a;
    if (n_tensors > 0 && impl.data_offset > impl.bytes.size())
        c.fail(
            JAL_STATUS_INVALID_LENGTH, "data section", end_of_infos,
            fmt::format("starts at offset {} (aligned to {}), past the end of the file ({} bytes)",
                        impl.data_offset, a, impl.bytes.size()));
    place_tensor_data(c, impl);
}

}  // namespace jal::model
