// The value types of GGUF key/value pairs and the storage layout of ggml tensor types.
#include <jal/model/gguf.hpp>

#include <fmt/format.h>

namespace jal::model {

const char* gguf_type_name(GgufType type) noexcept
{
    switch (type) {
    case GgufType::U8:
        return "u8";
    case GgufType::I8:
        return "i8";
    case GgufType::U16:
        return "u16";
    case GgufType::I16:
        return "i16";
    case GgufType::U32:
        return "u32";
    case GgufType::I32:
        return "i32";
    case GgufType::F32:
        return "f32";
    case GgufType::BOOL:
        return "bool";
    case GgufType::STRING:
        return "string";
    case GgufType::ARRAY:
        return "array";
    case GgufType::U64:
        return "u64";
    case GgufType::I64:
        return "i64";
    case GgufType::F64:
        return "f64";
    }
    return "?";
}

size_t gguf_type_size(GgufType type) noexcept
{
    switch (type) {
    case GgufType::U8:
    case GgufType::I8:
    case GgufType::BOOL:
        return 1;
    case GgufType::U16:
    case GgufType::I16:
        return 2;
    case GgufType::U32:
    case GgufType::I32:
    case GgufType::F32:
        return 4;
    case GgufType::U64:
    case GgufType::I64:
    case GgufType::F64:
        return 8;
    case GgufType::STRING:
    case GgufType::ARRAY:
        return 0;
    }
    return 0;
}

// ggml.h's type_traits for the types we accept (blck_size, type_size).
static constexpr TensorTypeInfo kTensorTypes[] = {
    {TensorType::F32, "f32", 1, 4},       {TensorType::F16, "f16", 1, 2},
    {TensorType::Q4_0, "q4_0", 32, 18},   {TensorType::Q4_1, "q4_1", 32, 20},
    {TensorType::Q5_0, "q5_0", 32, 22},   {TensorType::Q5_1, "q5_1", 32, 24},
    {TensorType::Q8_0, "q8_0", 32, 34},   {TensorType::Q8_1, "q8_1", 32, 36},
    {TensorType::I8, "i8", 1, 1},         {TensorType::I16, "i16", 1, 2},
    {TensorType::I32, "i32", 1, 4},       {TensorType::I64, "i64", 1, 8},
    {TensorType::F64, "f64", 1, 8},       {TensorType::BF16, "bf16", 1, 2},
    {TensorType::MXFP4, "mxfp4", 32, 17},
};

const TensorTypeInfo* find_tensor_type(uint32_t id) noexcept
{
    for (const TensorTypeInfo& t : kTensorTypes)
        if (static_cast<uint32_t>(t.type) == id) return &t;
    return nullptr;
}

const TensorTypeInfo& tensor_type_info(TensorType type)
{
    const TensorTypeInfo* t = find_tensor_type(static_cast<uint32_t>(type));
    if (!t)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("unknown ggml tensor type {}", static_cast<uint32_t>(type)));
    return *t;
}

const char* tensor_type_name(TensorType type) noexcept
{
    const TensorTypeInfo* t = find_tensor_type(static_cast<uint32_t>(type));
    return t ? t->name : "?";
}

uint64_t tensor_bytes(TensorType type, uint64_t elements)
{
    const TensorTypeInfo& t = tensor_type_info(type);
    if (elements % t.block_elements != 0)
        throw Error(
            JAL_STATUS_INVALID_LENGTH,
            fmt::format("{} elements of type {} are not a whole number of {}-element blocks",
                        elements, t.name, t.block_elements));
    // Callers bound `elements` (the reader by the file size), so this cannot overflow for
    // any shape that fits a file; still, refuse rather than wrap.
    const uint64_t blocks = elements / t.block_elements;
    if (blocks > UINT64_MAX / t.block_bytes)
        throw Error(
            JAL_STATUS_INVALID_LENGTH,
            fmt::format("{} elements of type {} overflow 64 bits of bytes", elements, t.name));
    return blocks * t.block_bytes;
}

std::string GgufTensor::shape_string() const
{
    std::string s = "[";
    for (uint32_t i = 0; i < n_dims; ++i) s += fmt::format("{}{}", i ? ", " : "", ne[i]);
    return s + "]";
}

}  // namespace jal::model
