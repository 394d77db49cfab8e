// jal-emu: runs one or more emulated chips and serves them to host clients until
// SIGINT or SIGTERM.
#include "chip/chip.hpp"
#include "cli/domain_setup.hpp"
#include "cli/options.hpp"
#include "console/console_server.hpp"
#include "gdb/gdb_server.hpp"
#include "transport/connection.hpp"
#include "transport/unix_listener.hpp"

#include "jal/emu/socket_dir.hpp"
#include "util/log.hpp"
#include <jal/emu/socket_trust.hpp>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <pthread.h>
#include <stdexcept>
#include <sys/stat.h>
#include <vector>

namespace {

// Signals go to the main thread only, which waits for them.
sigset_t block_stop_signals()
{
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    std::signal(SIGPIPE, SIG_IGN);
    return stop_signals;
}

void prepare_socket_dir(const std::string& dir)
{
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
        throw std::runtime_error("cannot create socket directory " + dir + ": " +
                                 std::strerror(errno));
    if (auto why = jal::emu::socket_dir_problem(dir); !why.empty()) throw std::runtime_error(why);
}

// The --domain file's plan (its chips decide --chips), or without one a tray's for two
// chips or more (one switched scale-up domain), or none for a chip on its own.
std::optional<jal::emu::DomainPlan> plan_fabric(jal::emu::EmuOptions& opts)
{
    std::optional<jal::emu::DomainPlan> plan = jal::emu::plan_domain(opts);
    if (plan) opts.chips = static_cast<std::uint32_t>(plan->chips.size());
    if (!plan && opts.chips >= 2) plan = jal::emu::plan_tray(opts.chips);
    return plan;
}

}  // namespace

int main(int argc, char** argv)
{
    using namespace jal::emu;
    EmuOptions opts = parse_options(argc, argv);

    const sigset_t stop_signals = block_stop_signals();

    try {
        Log::open(opts.log_file);
        Log::set_level(opts.verbose ? LogLevel::debug : LogLevel::info);
        prepare_socket_dir(opts.socket_dir);
        UnixListener::allow_peer_uids(opts.allow_uids);
        // Shared by the chips; complete once the last chip is gone and it is closed below.
        std::shared_ptr<TraceWriter> trace;
        if (!opts.trace_file.empty()) trace = std::make_shared<TraceWriter>(opts.trace_file);

        const std::optional<DomainPlan> plan = plan_fabric(opts);
        const bool in_domain = !opts.domain_file.empty();
        // The chips of this process and the switch planes beyond their ports.
        std::shared_ptr<LinkFabric> fabric;
        if (plan) fabric = std::make_shared<LinkFabric>(plan->switches);
        std::vector<std::unique_ptr<Chip>> chips;
        std::vector<std::unique_ptr<UnixListener>> servers;
        std::vector<std::unique_ptr<ConsoleServer>> consoles;
        std::vector<std::unique_ptr<gdb::GdbServer>> debuggers;
        std::vector<std::unique_ptr<std::atomic<unsigned>>> pending;  // per chip, pre-HELLO
        for (std::uint32_t i = 0; i < opts.chips; ++i) {
            ChipConfig cfg = opts.chip;
            cfg.index = i;
            cfg.trace = trace;
            cfg.domain_chip = plan ? plan->chips[i] : i;
            if (plan) cfg.links = plan->links[i];
            cfg.fabric = fabric;
            chips.push_back(std::make_unique<Chip>(cfg));
            if (opts.gdb_port >= 0) {
                const auto port = static_cast<std::uint16_t>(opts.gdb_port ? opts.gdb_port + i : 0);
                debuggers.push_back(
                    std::make_unique<gdb::GdbServer>(*chips.back()->debug(), port, i));
                log(LogLevel::info, "chip{}: gdb remote stub on 127.0.0.1:{}{}", i,
                    debuggers.back()->port(),
                    cfg.debug_wait ? " (core held at reset until a debugger continues)" : "");
                debuggers.back()->start();
            }
            chips.back()->start();
            const std::string base = jal::emu_socket_base(opts.socket_dir, i);
            // The console first: clients treat the data socket's appearance as "ready".
            consoles.push_back(std::make_unique<ConsoleServer>(*chips.back(), base + ".console"));
            consoles.back()->start();
            Chip& chip = *chips.back();
            auto& waiting = *pending.emplace_back(std::make_unique<std::atomic<unsigned>>(0));
            servers.push_back(std::make_unique<UnixListener>(
                base + ".sock", SOCK_SEQPACKET,
                [c = &chip, &waiting, &session = opts.session](int fd) {
                    serve_connection(*c, fd, session, waiting);
                }));
            servers.back()->start();
        }
        log(LogLevel::info, "serving {} chip(s) in {}", opts.chips, opts.socket_dir);
        std::unique_ptr<fabric::Domain> domain;
        if (in_domain) {
            domain = join_domain(*plan, opts, chips, *fabric);
            log(LogLevel::info, "fabric domain {}: process {} joining over {}", opts.domain_file,
                opts.process_name, plan->topology.provider);
        }

        int sig = 0;
        sigwait(&stop_signals, &sig);
        log(LogLevel::info, "signal {}: shutting down", sig);
        for (auto& d : debuggers) d->stop();  // first: a held core waits for them
        for (auto& s : servers) s->stop();
        for (auto& c : consoles) c->stop();
        for (auto& c : chips) c->attach_domain(nullptr);
        if (fabric) fabric->set_remote(nullptr);
        domain.reset();  // tells the peers this process leaves
        for (auto& c : chips) c->stop();
        if (trace) trace->close();  // events still arriving from stopping threads are dropped
    } catch (const std::exception& e) {
        std::fprintf(stderr, "jal-emu: %s\n", e.what());
        return 1;
    }
    return 0;
}
