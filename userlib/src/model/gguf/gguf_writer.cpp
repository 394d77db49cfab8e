// GgufWriter: serialises the pairs and tensor descriptions up front, then streams the
// tensor data with its alignment padding.
#include <jal/model/gguf.hpp>

#include <fmt/format.h>

#include <cstring>
#include <ostream>
#include <unordered_set>

namespace jal::model {

struct JAL_HIDDEN GgufWriter::Impl {
    uint32_t alignment;
    uint64_t n_kv = 0;
    std::vector<char> kv_bytes;  // the serialised pairs
    std::unordered_set<std::string> keys;
    struct Tensor {
        std::string name;
        TensorType type;
        std::vector<uint64_t> ne;
        uint64_t bytes;
        uint64_t offset;  // within the data section
    };
    std::vector<Tensor> tensors;
    uint64_t data_bytes = 0;  // data section size, padded
    std::ostream* out = nullptr;
    size_t next = 0;
    uint64_t next_written = 0;  // bytes of tensors[next] written so far

    template <typename T>
    void put(const T& v)
    {
        const char* p = reinterpret_cast<const char*>(&v);
        kv_bytes.insert(kv_bytes.end(), p, p + sizeof v);
    }
    void put_string(std::string_view s)
    {
        put<uint64_t>(s.size());
        kv_bytes.insert(kv_bytes.end(), s.begin(), s.end());
    }
    void begin_kv(std::string key, GgufType type)
    {
        if (out)
            throw Error(JAL_STATUS_INVALID_FIELD,
                        fmt::format("GGUF writer: key '{}' set after begin()", key));
        if (key.empty()) throw Error(JAL_STATUS_INVALID_FIELD, "GGUF writer: empty key");
        if (!keys.insert(key).second)
            throw Error(JAL_STATUS_INVALID_FIELD,
                        fmt::format("GGUF writer: duplicate key '{}'", key));
        put_string(key);
        put<uint32_t>(static_cast<uint32_t>(type));
        ++n_kv;
    }
    uint64_t header_bytes() const
    {
        uint64_t n = 4 + 4 + 8 + 8 + kv_bytes.size();
        for (const Tensor& t : tensors) n += 8 + t.name.size() + 4 + 8 * t.ne.size() + 4 + 8;
        return (n + alignment - 1) / alignment * alignment;
    }
};

static void write_padding(std::ostream& out, uint64_t n)
{
    static const char zeros[64] = {};
    while (n > 0) {
        const uint64_t k = n < sizeof zeros ? n : sizeof zeros;
        out.write(zeros, static_cast<std::streamsize>(k));
        n -= k;
    }
}

GgufWriter::GgufWriter(uint32_t alignment) : impl_(std::make_unique<Impl>())
{
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        throw Error(
            JAL_STATUS_INVALID_FIELD,
            fmt::format("GGUF writer: alignment {} is not a non-zero power of two", alignment));
    impl_->alignment = alignment;
    if (alignment != kGgufDefaultAlignment) set_u32("general.alignment", alignment);
}

GgufWriter::~GgufWriter() = default;

#define JAL_GGUF_SCALAR(fn, T, tag)                     \
    void GgufWriter::fn(std::string key, T v)           \
    {                                                   \
        impl_->begin_kv(std::move(key), GgufType::tag); \
        impl_->put(v);                                  \
    }
JAL_GGUF_SCALAR(set_u8, uint8_t, U8)
JAL_GGUF_SCALAR(set_i8, int8_t, I8)
JAL_GGUF_SCALAR(set_u16, uint16_t, U16)
JAL_GGUF_SCALAR(set_i16, int16_t, I16)
JAL_GGUF_SCALAR(set_u32, uint32_t, U32)
JAL_GGUF_SCALAR(set_i32, int32_t, I32)
JAL_GGUF_SCALAR(set_u64, uint64_t, U64)
JAL_GGUF_SCALAR(set_i64, int64_t, I64)
JAL_GGUF_SCALAR(set_f32, float, F32)
JAL_GGUF_SCALAR(set_f64, double, F64)
#undef JAL_GGUF_SCALAR

void GgufWriter::set_bool(std::string key, bool v)
{
    impl_->begin_kv(std::move(key), GgufType::BOOL);
    impl_->put<uint8_t>(v ? 1 : 0);
}

void GgufWriter::set_string(std::string key, std::string_view v)
{
    impl_->begin_kv(std::move(key), GgufType::STRING);
    impl_->put_string(v);
}

void GgufWriter::set_array(std::string key, GgufType elem, uint64_t count,
                           std::span<const std::byte> elements)
{
    const size_t size = gguf_type_size(elem);
    if (size == 0)
        throw Error(
            JAL_STATUS_INVALID_FIELD,
            fmt::format("GGUF writer: key '{}': set_array needs a scalar element type, not {}", key,
                        gguf_type_name(elem)));
    if (elements.size() != count * size)
        throw Error(JAL_STATUS_INVALID_LENGTH,
                    fmt::format("GGUF writer: key '{}': {} bytes for {} {} elements", key,
                                elements.size(), count, gguf_type_name(elem)));
    impl_->begin_kv(std::move(key), GgufType::ARRAY);
    impl_->put<uint32_t>(static_cast<uint32_t>(elem));
    impl_->put<uint64_t>(count);
    const char* p = reinterpret_cast<const char*>(elements.data());
    impl_->kv_bytes.insert(impl_->kv_bytes.end(), p, p + elements.size());
}

void GgufWriter::set_array_i32(std::string key, std::span<const int32_t> v)
{
    set_array(std::move(key), GgufType::I32, v.size(), std::as_bytes(v));
}

void GgufWriter::set_array_u32(std::string key, std::span<const uint32_t> v)
{
    set_array(std::move(key), GgufType::U32, v.size(), std::as_bytes(v));
}

void GgufWriter::set_array_f32(std::string key, std::span<const float> v)
{
    set_array(std::move(key), GgufType::F32, v.size(), std::as_bytes(v));
}

void GgufWriter::set_string_array(std::string key, std::span<const std::string> v)
{
    impl_->begin_kv(std::move(key), GgufType::ARRAY);
    impl_->put<uint32_t>(static_cast<uint32_t>(GgufType::STRING));
    impl_->put<uint64_t>(v.size());
    for (const std::string& s : v) impl_->put_string(s);
}

uint64_t GgufWriter::add_tensor(std::string name, TensorType type, std::span<const uint64_t> ne)
{
    if (impl_->out)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("GGUF writer: tensor '{}' added after begin()", name));
    if (name.empty() || name.size() > kGgufMaxTensorName)
        throw Error(JAL_STATUS_INVALID_LENGTH,
                    fmt::format("GGUF writer: tensor name '{}' must have 1..{} bytes", name,
                                kGgufMaxTensorName));
    for (const auto& t : impl_->tensors)
        if (t.name == name)
            throw Error(JAL_STATUS_INVALID_FIELD,
                        fmt::format("GGUF writer: duplicate tensor '{}'", name));
    if (ne.empty() || ne.size() > kGgufMaxDims)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("GGUF writer: tensor '{}' has {} dimensions, expected 1..{}", name,
                                ne.size(), kGgufMaxDims));
    uint64_t elements = 1;
    for (uint64_t d : ne) {
        if (d == 0 || d > static_cast<uint64_t>(INT64_MAX) / elements)
            throw Error(
                JAL_STATUS_INVALID_FIELD,
                fmt::format("GGUF writer: tensor '{}': dimension {} is 0 or overflows", name, d));
        elements *= d;
    }
    if (ne[0] % tensor_type_info(type).block_elements != 0)
        throw Error(
            JAL_STATUS_INVALID_LENGTH,
            fmt::format("GGUF writer: tensor '{}': row of {} is not a whole number of {} blocks",
                        name, ne[0], tensor_type_name(type)));
    const uint64_t bytes = tensor_bytes(type, elements);
    const uint64_t a = impl_->alignment;
    impl_->tensors.push_back(
        {std::move(name), type, {ne.begin(), ne.end()}, bytes, impl_->data_bytes});
    impl_->data_bytes += (bytes + a - 1) / a * a;
    return bytes;
}

size_t GgufWriter::tensor_count() const noexcept
{
    return impl_->tensors.size();
}

uint64_t GgufWriter::file_size() const
{
    return impl_->header_bytes() + impl_->data_bytes;
}

void GgufWriter::begin(std::ostream& out)
{
    if (impl_->out) throw Error(JAL_STATUS_INVALID_FIELD, "GGUF writer: begin() called twice");
    impl_->out = &out;
    auto put = [&](const auto& v) { out.write(reinterpret_cast<const char*>(&v), sizeof v); };
    put(kGgufMagic);
    put(kGgufVersion);
    put(static_cast<uint64_t>(impl_->tensors.size()));
    put(impl_->n_kv);
    out.write(impl_->kv_bytes.data(), static_cast<std::streamsize>(impl_->kv_bytes.size()));
    uint64_t written = 24 + impl_->kv_bytes.size();
    for (const auto& t : impl_->tensors) {
        put(static_cast<uint64_t>(t.name.size()));
        out.write(t.name.data(), static_cast<std::streamsize>(t.name.size()));
        put(static_cast<uint32_t>(t.ne.size()));
        for (uint64_t d : t.ne) put(d);
        put(static_cast<uint32_t>(t.type));
        put(t.offset);
        written += 8 + t.name.size() + 4 + 8 * t.ne.size() + 4 + 8;
    }
    write_padding(out, impl_->header_bytes() - written);
    if (!out) throw Error(JAL_STATUS_IO_ERROR, "GGUF writer: writing the header failed");
}

std::string_view GgufWriter::next_tensor() const noexcept
{
    return impl_->next < impl_->tensors.size() ? std::string_view(impl_->tensors[impl_->next].name)
                                               : std::string_view();
}

uint64_t GgufWriter::next_tensor_bytes() const noexcept
{
    return impl_->next < impl_->tensors.size() ? impl_->tensors[impl_->next].bytes : 0;
}

void GgufWriter::write_tensor(std::span<const std::byte> data)
{
    if (impl_->out && impl_->next < impl_->tensors.size()) {
        const auto& t = impl_->tensors[impl_->next];
        if (impl_->next_written != 0 || data.size() != t.bytes)
            throw Error(JAL_STATUS_INVALID_LENGTH,
                        fmt::format("GGUF writer: tensor '{}' needs {} bytes, got {}", t.name,
                                    t.bytes, data.size()));
    }
    write_tensor_part(data);
}

void GgufWriter::write_tensor_part(std::span<const std::byte> part)
{
    if (!impl_->out)
        throw Error(JAL_STATUS_INVALID_FIELD, "GGUF writer: tensor data before begin()");
    if (impl_->next >= impl_->tensors.size())
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "GGUF writer: more tensor data than tensors declared");
    const auto& t = impl_->tensors[impl_->next];
    if (part.size() > t.bytes - impl_->next_written)
        throw Error(JAL_STATUS_INVALID_LENGTH,
                    fmt::format("GGUF writer: tensor '{}' has {} bytes; {} written, {} more given",
                                t.name, t.bytes, impl_->next_written, part.size()));
    std::ostream& out = *impl_->out;
    out.write(reinterpret_cast<const char*>(part.data()),
              static_cast<std::streamsize>(part.size()));
    impl_->next_written += part.size();
    if (impl_->next_written == t.bytes) {
        const uint64_t a = impl_->alignment;
        write_padding(out, (t.bytes + a - 1) / a * a - t.bytes);
        ++impl_->next;
        impl_->next_written = 0;
    }
    if (!out)
        throw Error(JAL_STATUS_IO_ERROR,
                    fmt::format("GGUF writer: writing tensor '{}' failed", t.name));
}

void GgufWriter::finish()
{
    if (!impl_->out) throw Error(JAL_STATUS_INVALID_FIELD, "GGUF writer: finish() before begin()");
    if (impl_->next != impl_->tensors.size())
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("GGUF writer: {} of {} tensors written; next is '{}'", impl_->next,
                                impl_->tensors.size(), impl_->tensors[impl_->next].name));
    impl_->out->flush();
    if (!*impl_->out) throw Error(JAL_STATUS_IO_ERROR, "GGUF writer: flushing failed");
}

}  // namespace jal::model
