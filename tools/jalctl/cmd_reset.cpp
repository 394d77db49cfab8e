// jalctl reset: reset the chip and wait, bounded and visibly, for it to come back.
#include <fmt/format.h>

#include <optional>
#include <vector>

#include "context.hpp"
#include "event_decode.hpp"
#include "exit_codes.hpp"
#include "json_views.hpp"
#include "table.hpp"

namespace jal::ctl {

namespace {

struct ResetOptions {
    double timeout_s = 30;
    bool admin = false;
    bool force = false;
};

json clients_json(const std::vector<jal::AttachedClient>& clients)
{
    json out = json::array();
    for (const auto& c : clients)
        out.push_back({{"function", c.function},
                       {"pid", c.pid},
                       {"process", c.process},
                       {"client", c.client_name},
                       {"contexts", c.contexts}});
    return out;
}

void print_clients(std::ostream& out, const std::vector<jal::AttachedClient>& clients)
{
    Table t({{"PID", Table::Align::right},
             {"PROCESS"},
             {"CLIENT"},
             {"CONTEXTS", Table::Align::right},
             {"FUNCTION", Table::Align::right}});
    for (const auto& c : clients)
        t.add_row({c.pid ? std::to_string(c.pid) : "?", c.process.empty() ? "?" : c.process,
                   c.client_name, std::to_string(c.contexts), std::to_string(c.function)});
    t.print(out);
}

// A reset takes every other client's contexts, memory and queues away. Without --force it
// is refused while any client is attached, or when the backend cannot tell. Returns the
// exit code of a refusal, or nothing to go on (with `clients` filled, when known).
std::optional<int> check_clients(Context& ctx, jal::ChipFunction& dev, const ResetOptions& opts,
                                 std::optional<std::vector<jal::AttachedClient>>& clients)
{
    std::string why;
    try {
        clients = dev.other_clients();
    } catch (const jal::Error& e) {
        if (e.status() != JAL_STATUS_UNSUPPORTED) throw;
        why = fmt::format("cannot tell which clients are attached ({})", e.what());
    }
    if (opts.force || (clients && clients->empty())) return std::nullopt;
    std::string message =
        clients ? fmt::format("refusing to reset: {} other client{} attached would lose {} "
                              "contexts, memory and queues; stop {} or pass --force",
                              clients->size(), clients->size() == 1 ? "" : "s",
                              clients->size() == 1 ? "its" : "their",
                              clients->size() == 1 ? "it" : "them")
                : fmt::format("refusing to reset: {}; pass --force to reset anyway", why);
    if (ctx.json) {
        json j = {{"device", dev.index()}, {"refused", true}, {"message", message}};
        j["clients"] = clients ? clients_json(*clients) : json(nullptr);
        ctx.print_json(j);
    } else {
        std::cout << fmt::format("device {}: {}\n", dev.index(), message);
        if (clients) print_clients(std::cout, *clients);
    }
    return kExitRefused;
}

int run_reset(Context& ctx, const ResetOptions& opts)
{
    jal::ChipFunction dev = ctx.open();
    std::optional<std::vector<jal::AttachedClient>> clients;
    if (auto refused = check_clients(ctx, dev, opts, clients)) return *refused;
    // Progress goes to stderr under --json so stdout stays one document.
    std::ostream& progress_out = ctx.json ? std::cerr : std::cout;
    if (clients && !clients->empty()) {
        progress_out << fmt::format("device {}: --force: {} other client{} will see "
                                    "JAL_STATUS_DEVICE_RESET:\n",
                                    dev.index(), clients->size(), clients->size() == 1 ? "" : "s");
        print_clients(progress_out, *clients);
    }
    auto timeout = std::chrono::milliseconds(static_cast<long long>(opts.timeout_s * 1000));
    progress_out << fmt::format("device {}: resetting ({}), waiting up to {} s\n", dev.index(),
                                opts.admin ? "admin RESET command" : "reset register",
                                opts.timeout_s)
                 << std::flush;
    jal::ResetOutcome out = dev.reset(
        opts.admin ? jal::ResetMethod::admin_command : jal::ResetMethod::reset_register, timeout,
        [&](const jal::ResetProgress& p) {
            progress_out << fmt::format("  {:6.2f} s  {:<9}  boot step {:>2}  POST {}\n",
                                        p.elapsed.count() / 1000.0, jal::state_name(p.status.state),
                                        p.status.boot_step, post_code_text(p.status.post_code))
                         << std::flush;
        });

    double elapsed = out.elapsed.count() / 1000.0;
    std::string verdict;
    if (!out.reset_observed)
        verdict =
            fmt::format("reset requested but the device never went down (still {}) within {} s",
                        jal::state_name(out.status.state), opts.timeout_s);
    else if (out.came_back)
        verdict = fmt::format("reset complete: ready after {:.2f} s{}", elapsed,
                              out.status.degraded ? " (degraded)" : "");
    else if (out.status.state == jal::DeviceState::failed)
        verdict = fmt::format(
            "reset done but the chip failed to boot after {:.2f} s (fault: {}, POST code {})",
            elapsed, jal_status_name(out.status.fault), post_code_text(out.status.post_code));
    else
        verdict = fmt::format(
            "device did not come back within {} s (still {}, boot step {}, POST code {})",
            opts.timeout_s, jal::state_name(out.status.state), out.status.boot_step,
            post_code_text(out.status.post_code));

    if (ctx.json) {
        json j = status_json(out.status);
        j["device"] = dev.index();
        j["reset_observed"] = out.reset_observed;
        j["came_back"] = out.came_back;
        j["elapsed_s"] = elapsed;
        j["message"] = verdict;
        j["refused"] = false;
        j["forced"] = opts.force;
        j["clients"] = clients ? clients_json(*clients) : json(nullptr);
        ctx.print_json(j);
    } else {
        std::cout << fmt::format("device {}: {}\n", dev.index(), verdict);
    }
    return out.came_back ? kExitOk : kExitFailure;
}

}  // namespace

void add_reset_command(CLI::App& app, Context& ctx)
{
    auto opts = std::make_shared<ResetOptions>();
    CLI::App* sub = app.add_subcommand(
        "reset",
        "Reset the chip (firmware reboots; all queues and contexts are lost) and wait for it\n"
        "to boot again, printing progress. Refuses (exit 3) while other clients are attached,\n"
        "listing them (pid, process, client name, contexts); --force resets anyway and their\n"
        "next calls fail with JAL_STATUS_DEVICE_RESET. Exits 0 only if the device was seen\n"
        "going down and coming back READY within --timeout, 1 otherwise, 2 for a bad\n"
        "command line.");
    add_common_options(*sub, ctx);
    sub->add_option("-t,--timeout", opts->timeout_s,
                    "Seconds to wait for the device to come back (default 30)")
        ->check(CLI::PositiveNumber);
    sub->add_flag("--admin", opts->admin,
                  "Reset with the admin RESET command instead of the reset register");
    sub->add_flag("-f,--force", opts->force,
                  "Reset even while other clients are attached (they lose their contexts)");
    sub->callback([&ctx, opts] { ctx.action = [&ctx, opts] { return run_reset(ctx, *opts); }; });
}

}  // namespace jal::ctl
