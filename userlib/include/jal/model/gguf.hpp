// GGUF files (the model format of ggml and llama.cpp): a validating reader and a streaming
// writer.
//
// GgufFile maps a file and checks all of it before anything is used: the header, every
// key/value pair, every tensor description and where each tensor's data lies. Nothing is
// allocated from a count in the file without first bounding it by the bytes that remain, so
// a corrupt or hostile file gets a jal::Error (JAL_STATUS_INVALID_FIELD or
// JAL_STATUS_INVALID_LENGTH) whose message names the key or tensor, the file offset and
// what was expected, and never a crash. The format is gguf.h's, version 3 (and 2, which
// only differs in being little-endian by definition), little-endian.
//
// GgufWriter builds a file: key/value pairs and tensor descriptions first, then the tensor
// data streamed in the declared order, with the alignment padding.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <jal/api.h>
#include <jal/error.hpp>

namespace jal::model {

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
inline constexpr uint32_t kGgufVersion = 3;
inline constexpr uint32_t kGgufDefaultAlignment = 32;  // when general.alignment is absent
inline constexpr uint32_t kGgufMaxDims = 4;            // GGML_MAX_DIMS
inline constexpr size_t kGgufMaxTensorName = 63;       // GGML_MAX_NAME - 1

// The value types of key/value pairs (gguf.h, enum gguf_type).
enum class GgufType : uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};
JAL_API const char* gguf_type_name(GgufType type) noexcept;  // "u32", "string", ...; "?" if unknown
JAL_API size_t gguf_type_size(GgufType type) noexcept;  // bytes of a scalar; 0 for STRING/ARRAY

// The tensor types (ggml.h, enum ggml_type) whose storage layout this library knows.
enum class TensorType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    BF16 = 30,
    MXFP4 = 39,
};
struct TensorTypeInfo {
    TensorType type;
    const char* name;         // ggml's name: "f32", "q8_0", "mxfp4", ...
    uint32_t block_elements;  // elements per block (1 for plain types)
    uint32_t block_bytes;     // bytes per block
};
// The layout of ggml type `id`, or nullptr when it is not one of the above.
JAL_API const TensorTypeInfo* find_tensor_type(uint32_t id) noexcept;
JAL_API const TensorTypeInfo& tensor_type_info(TensorType type);
JAL_API const char* tensor_type_name(TensorType type) noexcept;
// Bytes of `elements` consecutive elements; throws INVALID_LENGTH unless a whole number of
// blocks.
JAL_API uint64_t tensor_bytes(TensorType type, uint64_t elements);

// One key/value pair, pointing into the file.
struct GgufKv {
    std::string_view key;
    GgufType type;
    GgufType elem_type;                // arrays: the elements' type; otherwise == type
    uint64_t count;                    // arrays: elements; otherwise 1
    uint64_t offset;                   // file offset of the key
    std::span<const std::byte> value;  // scalar: its bytes; string: its characters; array: all
                                       // elements after the count (strings with their lengths)
};

// One tensor description, with its data inside the file.
struct JAL_API GgufTensor {
    std::string_view name;
    TensorType type;
    uint32_t n_dims;
    std::array<uint64_t, kGgufMaxDims> ne;  // ggml order: ne[0] is the contiguous row; unused = 1
    uint64_t n_elements;
    uint64_t info_offset;             // file offset of its description
    uint64_t data_offset;             // absolute file offset of its data
    std::span<const std::byte> data;  // exactly its bytes

    std::span<const uint64_t> shape() const { return {ne.data(), n_dims}; }
    std::string shape_string() const;  // "[2880, 201088]"
};

class JAL_API GgufFile {
public:
    // Maps and validates `path`. Throws jal::Error: IO_ERROR when it cannot be read,
    // INVALID_FIELD / INVALID_LENGTH when it is not a valid GGUF file.
    static GgufFile open(const std::string& path);
    // Validates a file held in memory (tests, fuzzing). `name` appears in messages.
    static GgufFile from_bytes(std::vector<std::byte> bytes, std::string name = "<memory>");

    GgufFile(GgufFile&&) noexcept;
    GgufFile& operator=(GgufFile&&) noexcept;
    ~GgufFile();

    const std::string& name() const noexcept;
    uint32_t version() const noexcept;
    uint32_t alignment() const noexcept;
    uint64_t data_section_offset() const noexcept;
    std::span<const std::byte> bytes() const noexcept;

    // ---- key/value pairs, in file order ----
    std::span<const GgufKv> kvs() const noexcept;
    const GgufKv* find_kv(std::string_view key) const noexcept;
    // The pair `key`; throws INVALID_FIELD "missing key" when absent.
    const GgufKv& kv(std::string_view key) const;

    // Typed values. Integer getters accept any integer type whose value fits; get_f32
    // accepts F32 and F64. Absent keys and values of another type throw INVALID_FIELD
    // naming the key, its offset, the type expected and the type found.
    uint8_t get_u8(std::string_view key) const;
    uint32_t get_u32(std::string_view key) const;
    int32_t get_i32(std::string_view key) const;
    uint64_t get_u64(std::string_view key) const;
    int64_t get_i64(std::string_view key) const;
    float get_f32(std::string_view key) const;
    double get_f64(std::string_view key) const;
    bool get_bool(std::string_view key) const;
    std::string_view get_string(std::string_view key) const;
    // The same, std::nullopt when the key is absent (a wrong type still throws).
    std::optional<uint32_t> find_u32(std::string_view key) const;
    std::optional<float> find_f32(std::string_view key) const;
    std::optional<bool> find_bool(std::string_view key) const;
    std::optional<std::string_view> find_string(std::string_view key) const;

    // Arrays. Integer arrays accept any integer element type; f32 arrays F32 or F64.
    uint64_t array_size(std::string_view key) const;
    std::vector<std::string_view> get_string_array(std::string_view key) const;
    std::vector<int64_t> get_int_array(std::string_view key) const;
    std::vector<float> get_f32_array(std::string_view key) const;

    // ---- tensors, in file order ----
    std::span<const GgufTensor> tensors() const noexcept;
    const GgufTensor* find_tensor(std::string_view name) const noexcept;
    // The tensor `name`; throws INVALID_FIELD "missing tensor" when absent.
    const GgufTensor& tensor(std::string_view name) const;

    struct Impl;

private:
    explicit GgufFile(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Builds a GGUF file. Set the pairs and declare the tensors, then begin() writes the header,
// the pairs and the tensor descriptions; write_tensor() streams each tensor's data in the
// order declared; finish() checks that every tensor was written and flushes.
class JAL_API GgufWriter {
public:
    explicit GgufWriter(uint32_t alignment = kGgufDefaultAlignment);
    ~GgufWriter();
    GgufWriter(const GgufWriter&) = delete;
    GgufWriter& operator=(const GgufWriter&) = delete;

    // Scalars. Setting a key twice throws INVALID_FIELD. A non-default alignment is
    // recorded as general.alignment by the constructor.
    void set_u8(std::string key, uint8_t v);
    void set_i8(std::string key, int8_t v);
    void set_u16(std::string key, uint16_t v);
    void set_i16(std::string key, int16_t v);
    void set_u32(std::string key, uint32_t v);
    void set_i32(std::string key, int32_t v);
    void set_u64(std::string key, uint64_t v);
    void set_i64(std::string key, int64_t v);
    void set_f32(std::string key, float v);
    void set_f64(std::string key, double v);
    void set_bool(std::string key, bool v);
    void set_string(std::string key, std::string_view v);
    // Arrays of scalars: `count` elements of `elem` (not STRING or ARRAY) whose
    // little-endian bytes are `elements`.
    void set_array(std::string key, GgufType elem, uint64_t count,
                   std::span<const std::byte> elements);
    void set_array_i32(std::string key, std::span<const int32_t> v);
    void set_array_u32(std::string key, std::span<const uint32_t> v);
    void set_array_f32(std::string key, std::span<const float> v);
    void set_string_array(std::string key, std::span<const std::string> v);

    // Declares a tensor (ne in ggml order, 1..4 dims, ne[0] a whole number of blocks).
    // Returns its data size in bytes.
    uint64_t add_tensor(std::string name, TensorType type, std::span<const uint64_t> ne);
    size_t tensor_count() const noexcept;
    // Size of the whole file once written.
    uint64_t file_size() const;

    void begin(std::ostream& out);
    // The next declared tensor's data: exactly its size. Writes padding after it.
    void write_tensor(std::span<const std::byte> data);
    // The next part of the current tensor's data (for tensors too large to hold at once);
    // the padding follows once its size is reached. Parts may not run past the tensor.
    void write_tensor_part(std::span<const std::byte> part);
    // Name of the tensor write_tensor() expects next (empty when all are written).
    std::string_view next_tensor() const noexcept;
    uint64_t next_tensor_bytes() const noexcept;  // its size (0 when all are written)
    void finish();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace jal::model
