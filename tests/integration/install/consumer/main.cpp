// A runtime author's first program against an installed libjal (docs/install.md): opens
// device 0 of the emulator whose socket directory is argv[1] and prints its identity.
// tests/integration/install builds it through find_package(jal) and through pkg-config.
#include <chrono>
#include <cstdio>

#include <jal/chip_function.hpp>
#include <jal/error.hpp>

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s EMU_DIR\n", argv[0]);
        return 2;
    }
    try {
        jal::OpenOptions options;
        options.emu_dir = argv[1];
        jal::ChipFunction dev = jal::ChipFunction::open(0, options);
        dev.wait_ready(std::chrono::seconds(30));
        const jal_identify id = dev.identify();
        std::printf("model=%.32s serial=%.32s interface=%u.%u\n", id.model, id.serial,
                    id.if_version >> 16, id.if_version & 0xffffu);
        return 0;
    } catch (const jal::Error& e) {
        std::fprintf(stderr, "consumer: %s\n", e.what());
        return 1;
    }
}
