// jal-as FILE -o OUT: assembles tile-ISA text into a code object (include/jal/hw/isa.h),
// the inverse of jal-objdump: jal-as reads jal-objdump's listing as it is, and a shorter
// hand-written form (docs/tile-isa.md, "Assembler"). Bad input prints FILE:line:column:
// and what is wrong, and exits 1; the object written is one the device's validator accepts.
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <jal/isa/assembler.hpp>
#include <jal/isa/code_object.hpp>
#include <jal/isa/version.hpp>

#include "tools/common/version.hpp"

namespace {

bool read_all(const std::string& path, std::string& out)
{
    if (path == "-") {
        out.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
        return !std::cin.bad();
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return !in.bad();
}

nlohmann::json summary(const std::vector<uint8_t>& object, const std::string& output)
{
    jal::isa::CodeObjectView v;
    (void)jal::isa::parse_code_object(object, &v, nullptr);
    return {{"ok", true},
            {"output", output},
            {"kernel", v.name},
            {"bytes", object.size()},
            {"instructions", v.code.size()},
            {"args_size", v.header.args_size},
            {"l1_bytes", v.header.l1_bytes}};
}

}  // namespace

int main(int argc, char** argv)
{
    CLI::App app{std::string("jal-as: assemble tile-ISA text into a code object (ISA ") +
                 jal::isa::version_string() + "); jal-objdump's listings are valid input"};
    app.set_version_flag("--version",
                         jal::tools::version_text(
                             "jal-as", {std::string("tile ISA ") + jal::isa::version_string()}));
    std::string input, output;
    bool json = false;
    app.add_option("file", input, "assembly text ('-': standard input)")->required();
    app.add_option("-o,--output", output, "code object file to write")->required();
    app.add_flag("--json", json,
                 "print the result as JSON: the kernel, its size and instructions, or the "
                 "error's line, column and message");
    CLI11_PARSE(app, argc, argv);

    std::string text;
    if (!read_all(input, text)) {
        std::cerr << "jal-as: " << input << ": cannot read\n";
        return 1;
    }
    const jal::isa::AsmResult r = jal::isa::assemble(text);
    if (!r.ok()) {
        if (json)
            std::cout << nlohmann::json{{"ok", false},
                                        {"file", input},
                                        {"line", r.error.line},
                                        {"column", r.error.column},
                                        {"message", r.error.message}}
                             .dump(2)
                      << "\n";
        std::cerr << input << ":" << r.error.text() << "\n";
        return 1;
    }
    std::ofstream out(output, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(r.object.data()),
              static_cast<std::streamsize>(r.object.size()));
    out.close();
    if (!out) {
        std::cerr << "jal-as: " << output << ": cannot write\n";
        return 1;
    }
    if (json) std::cout << summary(r.object, output).dump(2) << "\n";
    return 0;
}
