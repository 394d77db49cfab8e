// The C API's kernels from text (API 1.3): the tile ISA's assembler and disassembler
// (isa/, jal_isa) behind jal.h's handles.
#include <jal/isa/assembler.hpp>
#include <jal/isa/code_object.hpp>
#include <jal/isa/disasm.hpp>
#include <jal/jal.h>

#include "../runtime/c_api_support.hpp"

struct jal_kernel_s {
    std::vector<uint8_t> bytes;
    jal::isa::CodeObjectView view;
};

using namespace jal::runtime::capi;

extern "C" {

jal_status_t jal_kernel_assemble(const char* text, jal_kernel_t* out, jal_asm_error_t* error)
{
    jal::runtime::detail::HostSpan span_("jal_kernel_assemble");
    REQUIRE(text && out, "text or out is NULL");
    *out = nullptr;
    return call([&] {
        jal::isa::AsmResult r = jal::isa::assemble(text);
        if (!r.ok()) {
            if (struct_ok(error)) {
                jal_asm_error_t e{};
                e.line = r.error.line;
                e.column = r.error.column;
                std::snprintf(e.message, sizeof e.message, "%s", r.error.message.c_str());
                copy_out(error, e);
            }
            throw jal::Error(JAL_STATUS_INVALID_FIELD, r.error.text());
        }
        auto k = std::make_unique<jal_kernel_s>();
        k->bytes = std::move(r.object);
        std::string why;
        if (jal::isa::parse_code_object(k->bytes, &k->view, &why) != JAL_STATUS_OK)
            throw jal::Error(JAL_STATUS_INTERNAL, "assembled object does not parse: " + why);
        *out = k.release();
    });
}

jal_status_t jal_kernel_destroy(jal_kernel_t kernel)
{
    delete kernel;
    return JAL_STATUS_OK;
}

jal_status_t jal_kernel_code_object(jal_kernel_t kernel, const void** bytes, uint64_t* size)
{
    REQUIRE(kernel, "kernel is NULL");
    if (bytes) *bytes = kernel->bytes.data();
    if (size) *size = kernel->bytes.size();
    return JAL_STATUS_OK;
}

jal_status_t jal_kernel_get_info(jal_kernel_t kernel, jal_kernel_info_t* out)
{
    REQUIRE(kernel && struct_ok(out), "kernel or out is NULL, or out->struct_size is 0");
    const jal::isa::CodeObjectView& v = kernel->view;
    jal_kernel_info_t info{};
    info.instructions = static_cast<uint32_t>(v.code.size());
    info.args_size = v.header.args_size;
    info.l1_bytes = v.header.l1_bytes;
    info.args = static_cast<uint32_t>(v.args.size());
    std::snprintf(info.name, sizeof info.name, "%s", v.name.c_str());
    copy_out(out, info);
    return JAL_STATUS_OK;
}

jal_status_t jal_kernel_disassemble(const void* code_object, uint64_t size, char* text,
                                    uint64_t capacity, uint64_t* length)
{
    REQUIRE(code_object || size == 0, "code_object is NULL");
    REQUIRE(text || capacity == 0, "text is NULL");
    return call([&] {
        const std::string listing = jal::isa::disassemble(
            {static_cast<const uint8_t*>(code_object), static_cast<size_t>(size)});
        if (length) *length = listing.size();
        if (capacity == 0) return;
        const size_t n = std::min<uint64_t>(capacity - 1, listing.size());
        std::memcpy(text, listing.data(), n);
        text[n] = '\0';
    });
}

}  // extern "C"
