// GgufFile: opening (read into memory) and the typed accessors over the validated descriptions.
#include "gguf_file_impl.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace jal::model {

GgufFile::Impl::~Impl() = default;

namespace {

// The whole file, read into memory. Not mapped: a model file truncated or rewritten by
// another process while a mapping of it is in use turns the next access into SIGBUS, which
// would kill the runtime; a copy taken with pread() either completes or fails here, with a
// message. The price is the file's size in host memory while the GgufFile lives, where a
// mapping would have used the page cache.
std::vector<std::byte> read_regular_file(int fd, const std::string& path)
{
    struct stat st {};
    if (fstat(fd, &st) != 0)
        throw Error(JAL_STATUS_IO_ERROR, fmt::format("{}: {}", path, std::strerror(errno)));
    if (!S_ISREG(st.st_mode))
        throw Error(JAL_STATUS_IO_ERROR, fmt::format("{}: not a regular file", path));
    const auto size = static_cast<size_t>(st.st_size);
    std::vector<std::byte> bytes(size);
    size_t done = 0;
    while (done < size) {
        const ssize_t n = ::pread(fd, bytes.data() + done, size - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0)
            throw Error(JAL_STATUS_IO_ERROR, fmt::format("{}: read failed at byte {}: {}", path,
                                                         done, std::strerror(errno)));
        if (n == 0)
            throw Error(JAL_STATUS_IO_ERROR,
                        fmt::format("{}: the file shrank while it was read ({} of {} bytes)", path,
                                    done, size));
        done += static_cast<size_t>(n);
    }
    return bytes;
}

}  // namespace

GgufFile::GgufFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

GgufFile GgufFile::open(const std::string& path)
{
    // O_NONBLOCK: a FIFO (or a device) given as the model must fail below, not block open()
    // until some writer appears. It does not change reads of a regular file.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        throw Error(JAL_STATUS_IO_ERROR,
                    fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    std::vector<std::byte> bytes;
    try {
        bytes = read_regular_file(fd, path);
    } catch (...) {
        ::close(fd);
        throw;
    }
    ::close(fd);
    return from_bytes(std::move(bytes), path);
}

GgufFile GgufFile::from_bytes(std::vector<std::byte> bytes, std::string name)
{
    auto impl = std::make_unique<Impl>();
    impl->name = std::move(name);
    impl->owned = std::move(bytes);
    impl->bytes = impl->owned;
    parse_gguf(*impl);
    return GgufFile(std::move(impl));
}

const std::string& GgufFile::name() const noexcept
{
    return impl_->name;
}
uint32_t GgufFile::version() const noexcept
{
    return impl_->version;
}
uint32_t GgufFile::alignment() const noexcept
{
    return impl_->alignment;
}
uint64_t GgufFile::data_section_offset() const noexcept
{
    return impl_->data_offset;
}
std::span<const std::byte> GgufFile::bytes() const noexcept
{
    return impl_->bytes;
}
std::span<const GgufKv> GgufFile::kvs() const noexcept
{
    return impl_->kvs;
}
std::span<const GgufTensor> GgufFile::tensors() const noexcept
{
    return impl_->tensors;
}

const GgufKv* GgufFile::find_kv(std::string_view key) const noexcept
{
    auto it = impl_->kv_index.find(key);
    return it == impl_->kv_index.end() ? nullptr : &impl_->kvs[it->second];
}

const GgufKv& GgufFile::kv(std::string_view key) const
{
    if (const GgufKv* kv = find_kv(key)) return *kv;
    throw Error(JAL_STATUS_INVALID_FIELD, fmt::format("{}: missing key '{}'", impl_->name, key));
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const noexcept
{
    auto it = impl_->tensor_index.find(name);
    return it == impl_->tensor_index.end() ? nullptr : &impl_->tensors[it->second];
}

const GgufTensor& GgufFile::tensor(std::string_view name) const
{
    if (const GgufTensor* t = find_tensor(name)) return *t;
    throw Error(JAL_STATUS_INVALID_FIELD,
                fmt::format("{}: missing tensor '{}'", impl_->name, name));
}

// ---- typed values ----

namespace {

bool is_integer(GgufType t)
{
    switch (t) {
    case GgufType::U8:
    case GgufType::I8:
    case GgufType::U16:
    case GgufType::I16:
    case GgufType::U32:
    case GgufType::I32:
    case GgufType::U64:
    case GgufType::I64:
        return true;
    default:
        return false;
    }
}

bool is_signed(GgufType t)
{
    return t == GgufType::I8 || t == GgufType::I16 || t == GgufType::I32 || t == GgufType::I64;
}

template <typename T>
T load(const std::byte* p)
{
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// An integer element as a 128-bit-free pair: negative values as int64, the rest as uint64.
struct IntValue {
    bool negative;
    uint64_t magnitude;  // the value itself when !negative
    int64_t as_signed;
};

IntValue load_int(GgufType t, const std::byte* p)
{
    int64_t s = 0;
    uint64_t u = 0;
    switch (t) {
    case GgufType::U8:
        u = load<uint8_t>(p);
        break;
    case GgufType::U16:
        u = load<uint16_t>(p);
        break;
    case GgufType::U32:
        u = load<uint32_t>(p);
        break;
    case GgufType::U64:
        u = load<uint64_t>(p);
        break;
    case GgufType::I8:
        s = load<int8_t>(p);
        break;
    case GgufType::I16:
        s = load<int16_t>(p);
        break;
    case GgufType::I32:
        s = load<int32_t>(p);
        break;
    case GgufType::I64:
        s = load<int64_t>(p);
        break;
    default:
        break;
    }
    if (is_signed(t)) return {s < 0, s < 0 ? 0 : static_cast<uint64_t>(s), s};
    return {false, u, static_cast<int64_t>(u)};
}

}  // namespace

[[noreturn]] static void wrong_type(const std::string& file, const GgufKv& kv,
                                    std::string_view expected)
{
    std::string found = gguf_type_name(kv.type);
    if (kv.type == GgufType::ARRAY)
        found = fmt::format("array of {} {}", kv.count, gguf_type_name(kv.elem_type));
    throw Error(JAL_STATUS_INVALID_FIELD,
                fmt::format("{}: key '{}' at offset {}: expected {}, found {}", file, kv.key,
                            kv.offset, expected, found));
}

static uint64_t get_unsigned(const std::string& file, const GgufKv& kv, uint64_t max,
                             std::string_view expected)
{
    if (!is_integer(kv.type)) wrong_type(file, kv, expected);
    const IntValue v = load_int(kv.type, kv.value.data());
    if (v.negative || v.magnitude > max)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("{}: key '{}' at offset {}: value {} does not fit {}", file, kv.key,
                                kv.offset,
                                v.negative ? fmt::format("{}", v.as_signed)
                                           : fmt::format("{}", v.magnitude),
                                expected));
    return v.magnitude;
}

static int64_t get_signed(const std::string& file, const GgufKv& kv, int64_t min, int64_t max,
                          std::string_view expected)
{
    if (!is_integer(kv.type)) wrong_type(file, kv, expected);
    const IntValue v = load_int(kv.type, kv.value.data());
    if ((!v.negative && v.magnitude > static_cast<uint64_t>(max)) ||
        (v.negative && v.as_signed < min))
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("{}: key '{}' at offset {}: value {} does not fit {}", file, kv.key,
                                kv.offset,
                                v.negative ? fmt::format("{}", v.as_signed)
                                           : fmt::format("{}", v.magnitude),
                                expected));
    return v.negative ? v.as_signed : static_cast<int64_t>(v.magnitude);
}

uint8_t GgufFile::get_u8(std::string_view key) const
{
    return static_cast<uint8_t>(
        get_unsigned(impl_->name, kv(key), UINT8_MAX, "an unsigned 8-bit integer"));
}

uint32_t GgufFile::get_u32(std::string_view key) const
{
    return static_cast<uint32_t>(
        get_unsigned(impl_->name, kv(key), UINT32_MAX, "an unsigned 32-bit integer"));
}

int32_t GgufFile::get_i32(std::string_view key) const
{
    return static_cast<int32_t>(
        get_signed(impl_->name, kv(key), INT32_MIN, INT32_MAX, "a signed 32-bit integer"));
}

uint64_t GgufFile::get_u64(std::string_view key) const
{
    return get_unsigned(impl_->name, kv(key), UINT64_MAX, "an unsigned 64-bit integer");
}

int64_t GgufFile::get_i64(std::string_view key) const
{
    return get_signed(impl_->name, kv(key), INT64_MIN, INT64_MAX, "a signed 64-bit integer");
}

double GgufFile::get_f64(std::string_view key) const
{
    const GgufKv& k = kv(key);
    if (k.type == GgufType::F64) return load<double>(k.value.data());
    if (k.type == GgufType::F32) return load<float>(k.value.data());
    wrong_type(impl_->name, k, "f32 or f64");
}

float GgufFile::get_f32(std::string_view key) const
{
    const GgufKv& k = kv(key);
    if (k.type == GgufType::F32) return load<float>(k.value.data());
    if (k.type == GgufType::F64) return static_cast<float>(load<double>(k.value.data()));
    wrong_type(impl_->name, k, "f32");
}

bool GgufFile::get_bool(std::string_view key) const
{
    const GgufKv& k = kv(key);
    if (k.type != GgufType::BOOL) wrong_type(impl_->name, k, "bool");
    return static_cast<uint8_t>(k.value[0]) != 0;
}

std::string_view GgufFile::get_string(std::string_view key) const
{
    const GgufKv& k = kv(key);
    if (k.type != GgufType::STRING) wrong_type(impl_->name, k, "string");
    return {reinterpret_cast<const char*>(k.value.data()), k.value.size()};
}

std::optional<uint32_t> GgufFile::find_u32(std::string_view key) const
{
    return find_kv(key) ? std::optional(get_u32(key)) : std::nullopt;
}

std::optional<float> GgufFile::find_f32(std::string_view key) const
{
    return find_kv(key) ? std::optional(get_f32(key)) : std::nullopt;
}

std::optional<bool> GgufFile::find_bool(std::string_view key) const
{
    return find_kv(key) ? std::optional(get_bool(key)) : std::nullopt;
}

std::optional<std::string_view> GgufFile::find_string(std::string_view key) const
{
    return find_kv(key) ? std::optional(get_string(key)) : std::nullopt;
}

uint64_t GgufFile::array_size(std::string_view key) const
{
    const GgufKv& k = kv(key);
    if (k.type != GgufType::ARRAY) wrong_type(impl_->name, k, "an array");
    return k.count;
}

std::vector<std::string_view> GgufFile::get_string_array(std::string_view key) const
{
    const GgufKv& k = kv(key);
    if (k.type != GgufType::ARRAY || k.elem_type != GgufType::STRING)
        wrong_type(impl_->name, k, "array of string");
    // The parser checked every length; walk them again.
    std::vector<std::string_view> out;
    out.reserve(k.count);
    const std::byte* p = k.value.data();
    for (uint64_t i = 0; i < k.count; ++i) {
        const auto len = load<uint64_t>(p);
        out.emplace_back(reinterpret_cast<const char*>(p + 8), len);
        p += 8 + len;
    }
    return out;
}

std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const
{
    const GgufKv& k = kv(key);
    if (k.type != GgufType::ARRAY || !is_integer(k.elem_type))
        wrong_type(impl_->name, k, "array of integers");
    const size_t size = gguf_type_size(k.elem_type);
    std::vector<int64_t> out;
    out.reserve(k.count);
    for (uint64_t i = 0; i < k.count; ++i) {
        const IntValue v = load_int(k.elem_type, k.value.data() + i * size);
        if (!v.negative && v.magnitude > static_cast<uint64_t>(INT64_MAX))
            throw Error(JAL_STATUS_INVALID_FIELD,
                        fmt::format("{}: key '{}' at offset {}: element {} ({}) does not fit a "
                                    "signed 64-bit integer",
                                    impl_->name, k.key, k.offset, i, v.magnitude));
        out.push_back(v.as_signed);
    }
    return out;
}

std::vector<float> GgufFile::get_f32_array(std::string_view key) const
{
    const GgufKv& k = kv(key);
    if (k.type != GgufType::ARRAY || (k.elem_type != GgufType::F32 && k.elem_type != GgufType::F64))
        wrong_type(impl_->name, k, "array of f32");
    std::vector<float> out;
    out.reserve(k.count);
    for (uint64_t i = 0; i < k.count; ++i)
        out.push_back(k.elem_type == GgufType::F32
                          ? load<float>(k.value.data() + 4 * i)
                          : static_cast<float>(load<double>(k.value.data() + 8 * i)));
    return out;
}

}  // namespace jal::model
