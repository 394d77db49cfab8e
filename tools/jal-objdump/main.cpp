// jal-objdump FILE: disassembles a tile-ISA code object (include/jal/hw/isa.h).
// The object is checked with the device's own validator first: a malformed object prints
// the validator's message and exits 1; --force still dumps whatever its header makes
// readable (and still exits 1).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <jal/hw/status.h>
#include <jal/isa/code_object.hpp>
#include <jal/isa/disasm.hpp>
#include <jal/isa/version.hpp>

#include "tools/common/version.hpp"

#include "objdump_json.hpp"

int main(int argc, char** argv)
{
    CLI::App app{std::string("jal-objdump: disassemble a tile-ISA code object (ISA ") +
                 jal::isa::version_string() + ")"};
    app.set_version_flag("--version",
                         jal::tools::version_text("jal-objdump", {std::string("tile ISA ") +
                                                                  jal::isa::version_string()}));
    std::string path;
    bool json = false;
    bool force = false;
    app.add_option("file", path, "code object file")->required();
    app.add_flag("--json", json, "print the header, arguments and instructions as JSON");
    app.add_flag("--force", force, "dump a malformed object as far as it is readable");
    CLI11_PARSE(app, argc, argv);

    std::ifstream in(path, std::ios::binary);
    if (!in) {
        std::cerr << "jal-objdump: " << path << ": cannot open\n";
        return 1;
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
    if (in.bad()) {
        std::cerr << "jal-objdump: " << path << ": read error\n";
        return 1;
    }

    std::string error;
    const jal_status st = jal::isa::validate_code_object(bytes, &error);
    if (st != JAL_STATUS_OK) {
        std::cerr << "jal-objdump: " << path << ": invalid code object (" << jal_status_name(st)
                  << "): " << error << "\n";
        if (!force) return 1;
    }
    if (json)
        std::cout << jal::objdump::code_object_json(bytes).dump(2) << "\n";
    else
        std::cout << jal::isa::disassemble(bytes);
    return st == JAL_STATUS_OK ? 0 : 1;
}
