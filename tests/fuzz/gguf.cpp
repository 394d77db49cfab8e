// fuzz-gguf: the GGUF reader (userlib/src/model/gguf) on arbitrary bytes.
//
// Checks, besides ASan/UBSan: a rejected file gets a jal::Error of INVALID_FIELD or
// INVALID_LENGTH whose message names the file; an accepted file has every key/value pair
// and tensor inside its bytes, tensor data aligned and exactly as long as its type and
// shape say; every typed getter either answers or throws jal::Error; and the writer
// reproduces it: writing its pairs and tensors with GgufWriter and reading the result back
// gives the same pairs, shapes and data. GPT-OSS hyper-parameters and the tokenizer are
// read from it too (they may refuse it, with jal::Error).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <jal/error.hpp>
#include <jal/model/deepseek_config.hpp>
#include <jal/model/gguf.hpp>
#include <jal/model/gpt_oss_config.hpp>
#include <jal/model/tokenizer.hpp>

#include "fuzz_check.hpp"

namespace {

using namespace jal::model;

constexpr const char* kName = "fuzz.gguf";

bool inside(std::span<const std::byte> part, std::span<const std::byte> whole)
{
    return part.empty() || (part.data() >= whole.data() &&
                            part.data() + part.size() <= whole.data() + whole.size());
}

void check_structure(const GgufFile& f)
{
    const auto bytes = f.bytes();
    FUZZ_CHECK(f.alignment() != 0 && (f.alignment() & (f.alignment() - 1)) == 0);
    FUZZ_CHECK(f.data_section_offset() % f.alignment() == 0);
    // A file without tensors may end before its (empty) data section.
    FUZZ_CHECK(f.tensors().empty() || f.data_section_offset() <= bytes.size());
    for (const GgufKv& kv : f.kvs()) {
        FUZZ_CHECK(!kv.key.empty());
        FUZZ_CHECK(kv.offset < f.data_section_offset());
        FUZZ_CHECK(inside(kv.value, bytes));
        FUZZ_CHECK(f.find_kv(kv.key) == &kv);  // keys are unique
    }
    for (const GgufTensor& t : f.tensors()) {
        FUZZ_CHECK(inside(t.data, bytes));
        FUZZ_CHECK(t.n_dims >= 1 && t.n_dims <= kGgufMaxDims);
        FUZZ_CHECK(t.data_offset >= f.data_section_offset());
        FUZZ_CHECK((t.data_offset - f.data_section_offset()) % f.alignment() == 0);
        FUZZ_CHECK(t.data.size() == tensor_bytes(t.type, t.n_elements));
        FUZZ_CHECK(f.find_tensor(t.name) == &t);
        uint64_t n = 1;
        for (uint64_t d : t.ne) n *= d;
        FUZZ_CHECK(n == t.n_elements);
    }
}

// Every getter that fits the pair's type; the integer ones may refuse values that do not
// fit, with jal::Error.
void use_getters(const GgufFile& f)
{
    for (const GgufKv& kv : f.kvs()) {
        try {
            if (kv.type == GgufType::STRING) {
                FUZZ_CHECK(f.get_string(kv.key).size() == kv.value.size());
            } else if (kv.type == GgufType::ARRAY) {
                FUZZ_CHECK(f.array_size(kv.key) == kv.count);
                if (kv.elem_type == GgufType::STRING)
                    FUZZ_CHECK(f.get_string_array(kv.key).size() == kv.count);
                else if (kv.elem_type == GgufType::F32 || kv.elem_type == GgufType::F64)
                    FUZZ_CHECK(f.get_f32_array(kv.key).size() == kv.count);
                else if (kv.elem_type != GgufType::BOOL)
                    FUZZ_CHECK(f.get_int_array(kv.key).size() == kv.count);
            } else if (kv.type == GgufType::F32 || kv.type == GgufType::F64) {
                (void)f.get_f64(kv.key);
                (void)f.get_f32(kv.key);
            } else if (kv.type == GgufType::BOOL) {
                (void)f.get_bool(kv.key);
            } else {
                (void)f.get_i64(kv.key);
            }
        } catch (const jal::Error&) {}
    }
}

// The pair `kv` of `f`, through the writer's setters.
void copy_kv(GgufWriter& w, const GgufFile& f, const GgufKv& kv)
{
    std::string key(kv.key);
    auto scalar = [&]<typename T>(T) {
        T v;
        std::memcpy(&v, kv.value.data(), sizeof v);
        return v;
    };
    switch (kv.type) {
    case GgufType::U8:
        return w.set_u8(key, scalar(uint8_t{}));
    case GgufType::I8:
        return w.set_i8(key, scalar(int8_t{}));
    case GgufType::U16:
        return w.set_u16(key, scalar(uint16_t{}));
    case GgufType::I16:
        return w.set_i16(key, scalar(int16_t{}));
    case GgufType::U32:
        return w.set_u32(key, scalar(uint32_t{}));
    case GgufType::I32:
        return w.set_i32(key, scalar(int32_t{}));
    case GgufType::U64:
        return w.set_u64(key, scalar(uint64_t{}));
    case GgufType::I64:
        return w.set_i64(key, scalar(int64_t{}));
    case GgufType::F32:
        return w.set_f32(key, scalar(float{}));
    case GgufType::F64:
        return w.set_f64(key, scalar(double{}));
    case GgufType::BOOL:
        return w.set_bool(key, scalar(uint8_t{}) != 0);
    case GgufType::STRING:
        return w.set_string(key, {reinterpret_cast<const char*>(kv.value.data()), kv.value.size()});
    case GgufType::ARRAY:
        break;
    }
    if (kv.elem_type == GgufType::STRING) {
        const auto views = f.get_string_array(kv.key);
        const std::vector<std::string> strings(views.begin(), views.end());
        return w.set_string_array(key, strings);
    }
    w.set_array(key, kv.elem_type, kv.count, kv.value);
}

// Writes `f` again with the writer and reads it back: the same pairs (general.alignment
// comes from the writer's constructor), tensors, shapes and data.
void check_rewrite(const GgufFile& f)
{
    GgufWriter w(f.alignment());
    for (const GgufKv& kv : f.kvs())
        if (kv.key != "general.alignment") copy_kv(w, f, kv);
    for (const GgufTensor& t : f.tensors()) w.add_tensor(std::string(t.name), t.type, t.shape());
    // The writer pads the data section to the alignment even when there are no tensors,
    // and an accepted file may leave that out: with general.alignment 1 GiB the rewrite
    // would be that large. Such files are read above; they are not rewritten.
    if (w.file_size() > (64u << 20)) return;
    std::ostringstream out;
    w.begin(out);
    for (const GgufTensor& t : f.tensors()) w.write_tensor(t.data);
    w.finish();
    const std::string s = out.str();
    FUZZ_CHECK(s.size() == w.file_size());
    std::vector<std::byte> bytes(s.size());
    std::memcpy(bytes.data(), s.data(), s.size());
    const GgufFile g = GgufFile::from_bytes(std::move(bytes), "rewritten");

    FUZZ_CHECK(g.alignment() == f.alignment());
    for (const GgufKv& kv : f.kvs()) {
        const GgufKv* k = g.find_kv(kv.key);
        FUZZ_CHECK(k && k->type == kv.type && k->elem_type == kv.elem_type && k->count == kv.count);
        FUZZ_CHECK(k->value.size() == kv.value.size() &&
                   std::memcmp(k->value.data(), kv.value.data(), kv.value.size()) == 0);
    }
    size_t extra = f.find_kv("general.alignment") || f.alignment() == kGgufDefaultAlignment ? 0 : 1;
    FUZZ_CHECK(g.kvs().size() == f.kvs().size() + extra);
    FUZZ_CHECK(g.tensors().size() == f.tensors().size());
    for (size_t i = 0; i < f.tensors().size(); ++i) {
        const GgufTensor &a = f.tensors()[i], &b = g.tensors()[i];
        FUZZ_CHECK(a.name == b.name && a.type == b.type && a.n_dims == b.n_dims && a.ne == b.ne);
        FUZZ_CHECK(a.data.size() == b.data.size() &&
                   std::memcmp(a.data.data(), b.data.data(), a.data.size()) == 0);
    }
}

void use_consumers(const GgufFile& f)
{
    try {
        (void)read_gpt_oss_config(f);
    } catch (const jal::Error&) {}
    try {
        (void)read_deepseek_config(f);
    } catch (const jal::Error&) {}
    try {
        // Like from_gguf, has_vocabulary refuses a wrongly typed tokenizer.ggml.model.
        if (!Tokenizer::has_vocabulary(f)) return;
        const auto tok = Tokenizer::from_gguf(f);
        const auto ids = tok->encode("Hello, world! 123");
        for (int32_t id : ids) FUZZ_CHECK(id >= 0 && static_cast<uint32_t>(id) < tok->vocab_size());
        (void)tok->decode(ids);
    } catch (const jal::Error&) {}
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    std::vector<std::byte> bytes(size);
    if (size) std::memcpy(bytes.data(), data, size);
    std::optional<GgufFile> f;
    try {
        f.emplace(GgufFile::from_bytes(std::move(bytes), kName));
    } catch (const jal::Error& e) {
        const std::string msg = e.what();
        FUZZ_CHECK(e.status() == JAL_STATUS_INVALID_FIELD ||
                   e.status() == JAL_STATUS_INVALID_LENGTH);
        FUZZ_CHECK(msg.rfind(std::string(kName) + ": ", 0) == 0);
        return 0;
    }
    check_structure(*f);
    use_getters(*f);
    check_rewrite(*f);
    use_consumers(*f);
    return 0;
}
