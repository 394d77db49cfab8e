// -d all: the chosen subcommand once per device of the emulator directory (or driver).
#include <fmt/format.h>

#include "context.hpp"
#include "exit_codes.hpp"

namespace jal::ctl {

namespace {

// The worse of two exit codes: failed (5) > degraded (4) > could not check (1) > ok.
int worse(int a, int b)
{
    return std::max(a, b);
}

}  // namespace

int run_selected(Context& ctx)
{
    if (!ctx.all_devices || ctx.all_mode == Context::AllDevices::self) return ctx.action();
    if (ctx.all_mode == Context::AllDevices::refused) {
        std::cerr << "jalctl: this command works on one device at a time; pass -d INDEX\n";
        if (ctx.json)
            ctx.print_json({{"error", "-d all is not supported here"}, {"status", "usage"}});
        return kExitUsage;
    }
    const std::string dir = ctx.socket_dir();
    auto entries = jal::ChipFunction::enumerate(dir);
    if (entries.empty())
        throw jal::Error(JAL_STATUS_NO_DEVICE,
                         fmt::format("no devices found in {} (is jal-emu running? set "
                                     "JAL_EMU_DIR)",
                                     dir));
    nlohmann::json docs = nlohmann::json::array();
    int code = kExitOk;
    for (size_t i = 0; i < entries.size(); i++) {
        ctx.device = entries[i].index;
        nlohmann::json doc;
        if (ctx.json) ctx.capture = &doc;
        if (!ctx.json) std::cout << fmt::format("{}== device {} ==\n", i ? "\n" : "", ctx.device);
        try {
            code = worse(code, ctx.action());
        } catch (const jal::Error& e) {
            // One unreachable device must not hide the others.
            std::cerr << "jalctl: " << e.what() << '\n';
            doc = {{"device", ctx.device}, {"error", e.what()}, {"status", e.status_name()}};
            code = worse(code, kExitFailure);
        }
        ctx.capture = nullptr;
        if (ctx.json) {
            if (doc.is_object() && !doc.contains("device")) doc["device"] = ctx.device;
            docs.push_back(doc);
        }
    }
    if (ctx.json) ctx.print_json({{"devices", docs}});
    std::cout.flush();
    return code;
}

}  // namespace jal::ctl
