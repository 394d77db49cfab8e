// jalctl fw status | fw update IMAGE: the firmware slots, and a verified, fail-safe update
// (docs/firmware.md 10, docs/jalctl.md).
#include <fmt/format.h>

#include <fstream>
#include <iterator>
#include <optional>
#include <vector>

#include "context.hpp"
#include "exit_codes.hpp"
#include "fw_views.hpp"
#include "fwimage/image.hpp"
#include "json_views.hpp"

namespace jal::ctl {

namespace {

struct UpdateOptions {
    std::string image, key;
    double timeout_s = 30;
    bool force = false;
};

std::vector<std::uint8_t> read_bytes(const std::string& path, const char* what)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw jal::Error(JAL_STATUS_INVALID_FIELD, fmt::format("cannot read {} {}", what, path));
    return {std::istreambuf_iterator<char>(in), {}};
}

int run_status(Context& ctx)
{
    jal::ChipFunction dev = ctx.open_booted(true);
    const jal_fw_status st = dev.firmware_status();
    if (ctx.json) {
        json j = fw_status_json(st);
        j["device"] = dev.index();
        ctx.print_json(j);
    } else {
        print_fw_status(std::cout, dev.index(), st);
    }
    return kExitOk;
}

// The one report of an update that did not happen: who refused (this host's check or the
// chip's boot ROM), why, and what still runs.
int report_rejected(Context& ctx, unsigned device, const UpdateOptions& o, const char* by,
                    const std::string& reason, const std::string& detail, const jal_fw_status& st)
{
    const std::string running = fmt::format(
        "slot {} (version {})", slot_letter(st.running_slot),
        jal::fwimage::version_text(st.slots[st.running_slot % JAL_FW_SLOTS].fw_version));
    const std::string msg =
        fmt::format("{}: rejected by the {}: {}{}{}; nothing was changed, the "
                    "chip still runs {}",
                    o.image, by, reason, detail.empty() ? "" : ": ", detail, running);
    std::cerr << "jalctl: " << msg << '\n';
    if (ctx.json)
        ctx.print_json({{"device", device},
                        {"image", o.image},
                        {"updated", false},
                        {"rejected_by", by},
                        {"reason", reason},
                        {"detail", detail},
                        {"message", msg},
                        {"firmware", fw_status_json(st)}});
    return kExitFailure;
}

// Like `jalctl reset`: activating resets the chip, which takes other clients' work away.
std::optional<int> refuse_if_clients(Context& ctx, jal::ChipFunction& dev, bool force)
{
    if (force) return std::nullopt;
    std::string why;
    try {
        const auto clients = dev.other_clients();
        if (clients.empty()) return std::nullopt;
        why = fmt::format("{} other client(s) attached would lose their contexts, memory and "
                          "queues (see `jalctl reset`); stop them or pass --force",
                          clients.size());
    } catch (const jal::Error& e) {
        if (e.status() != JAL_STATUS_UNSUPPORTED) throw;
        why = fmt::format("cannot tell which clients are attached ({}); pass --force", e.what());
    }
    const std::string msg = "refusing to update: the chip resets into the new image, and " + why;
    if (ctx.json)
        ctx.print_json({{"device", dev.index()}, {"refused", true}, {"message", msg}});
    else
        std::cout << fmt::format("device {}: {}\n", dev.index(), msg);
    return kExitRefused;
}

int report_outcome(Context& ctx, jal::ChipFunction& dev, const UpdateOptions& o,
                   const jal::ResetOutcome& out, const jal_fw_status& before)
{
    if (!out.came_back)
        throw jal::Error(JAL_STATUS_TIMEOUT,
                         fmt::format("device {}: the chip did not come back READY within {} s "
                                     "after the update (state {}); see `jalctl log`",
                                     dev.index(), o.timeout_s, jal::state_name(out.status.state)));
    const jal_fw_status after = dev.firmware_status();
    const std::uint32_t target = 1 - before.running_slot;
    const bool updated = after.running_slot == target && !(after.flags & JAL_FW_STATUS_FELL_BACK);
    const auto& run = after.slots[after.running_slot % JAL_FW_SLOTS];
    const std::string msg =
        updated ? fmt::format("updated: running slot {}, version {} (rollback {}), ready after "
                              "{:.2f} s",
                              slot_letter(target), jal::fwimage::version_text(run.fw_version),
                              run.rollback, out.elapsed.count() / 1000.0)
                : fmt::format("the new image in slot {} failed its first boot; the chip fell back "
                              "to slot {} (version {})",
                              slot_letter(target), slot_letter(after.running_slot),
                              jal::fwimage::version_text(run.fw_version));
    if (ctx.json) {
        ctx.print_json({{"device", dev.index()},
                        {"image", o.image},
                        {"updated", updated},
                        {"fell_back", !updated},
                        {"elapsed_s", out.elapsed.count() / 1000.0},
                        {"message", msg},
                        {"firmware", fw_status_json(after)}});
    } else {
        std::cout << fmt::format("device {}: {}\n", dev.index(), msg);
        print_fw_status(std::cout, dev.index(), after);
    }
    return updated ? kExitOk : kExitFailure;
}

int run_update(Context& ctx, const UpdateOptions& o)
{
    const auto image = read_bytes(o.image, "firmware image");
    const std::string key = o.key.empty() ? std::string(jal::fwimage::dev_public_key_pem()) : [&] {
        const auto b = read_bytes(o.key, "public key");
        return std::string(b.begin(), b.end());
    }();
    jal::ChipFunction dev = ctx.open_booted(true);  // a failed chip may need new firmware most
    const jal_fw_status before = dev.firmware_status();
    // The chip checks again; checking here first gives a clear message without touching it.
    const auto check = jal::fwimage::verify(image, key, before.rollback_fuses);
    if (!check.ok())
        return report_rejected(ctx, dev.index(), o, "host check",
                               jal_fw_image_error_name(check.error), check.detail, before);
    if (auto refused = refuse_if_clients(ctx, dev, o.force)) return *refused;

    std::ostream& progress = ctx.json ? std::cerr : std::cout;
    progress << fmt::format("device {}: writing {} bytes (version {}) to slot {}\n", dev.index(),
                            image.size(), jal::fwimage::version_text(check.header.fw_version),
                            slot_letter(1 - before.running_slot));
    dev.firmware_download(image.data(), image.size());
    progress << fmt::format("device {}: activating; the chip resets into the new image\n",
                            dev.index())
             << std::flush;
    const auto timeout = std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000));
    jal::ResetOutcome out;
    try {
        out = dev.reset(jal::ResetMethod::firmware_update, timeout);
    } catch (const jal::Error& e) {
        if (e.status() != JAL_STATUS_IMAGE_REJECTED) throw;
        return report_rejected(ctx, dev.index(), o, "chip's boot ROM", e.what(), "",
                               dev.firmware_status());
    }
    return report_outcome(ctx, dev, o, out, before);
}

}  // namespace

void add_fw_command(CLI::App& app, Context& ctx)
{
    CLI::App* fw = app.add_subcommand(
        "fw", "Firmware slots and updates: `fw status`, `fw update IMAGE` (docs/firmware.md 10)");
    fw->require_subcommand(1);
    add_common_options(*fw, ctx);
    CLI::App* status = fw->add_subcommand(
        "status", "Slots A and B (state, version, rollback counter, build), the running slot, "
                  "the rollback fuses and the boot ROM's key");
    add_common_options(*status, ctx);
    status->callback([&ctx] { ctx.action = [&ctx] { return run_status(ctx); }; });

    auto o = std::make_shared<UpdateOptions>();
    CLI::App* update = fw->add_subcommand(
        "update",
        "Verify a signed image here (signature, hash, length, rollback against the chip's\n"
        "fuses), write it to the inactive slot, have the chip's boot ROM verify it again and\n"
        "reset into it on trial, wait for it and report the running slot and version. An\n"
        "image that fails its first boot is replaced by the previous one. Exits 0 when the\n"
        "new image runs; 1 when it was rejected (nothing changed) or fell back; 3 when other\n"
        "clients are attached (without --force); 2 for a bad command line.");
    add_common_options(*update, ctx);
    update->add_option("image", o->image, "signed firmware image (e.g. build/bin/jal-fw.bin)")
        ->required();
    update->add_option("--key", o->key,
                       "public key (PEM) for the host-side check (default: the development key)");
    update
        ->add_option("-t,--timeout", o->timeout_s,
                     "Seconds to wait for the chip to come back (default 30)")
        ->check(CLI::PositiveNumber);
    update->add_flag("-f,--force", o->force, "Update even while other clients are attached");
    update->callback([&ctx, o] { ctx.action = [&ctx, o] { return run_update(ctx, *o); }; });
}

}  // namespace jal::ctl
