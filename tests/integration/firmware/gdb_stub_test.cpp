// jal-emu's GDB stub (--gdb, --gdb-wait) driven by Debian's gdb-multiarch in batch mode
// against the firmware image and its ELF (build/bin/jal-fw.elf), and by a raw protocol
// client for what batch gdb cannot do (interrupting a running core, malformed packets).
// Every test ends with the chip reaching READY through libjal, as a host would see it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fixture/emu_process.hpp>
#include <fixture/run_command.hpp>
#include <jal/chip_function.hpp>

#include "console_client.hpp"

namespace {

using jal::test::EmuProcess;

// gdb-multiarch on PATH, or "" (then the tests skip: scripts/setup.sh installs it).
std::string find_gdb()
{
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        const std::string candidate = dir + "/gdb-multiarch";
        if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
    return {};
}

// The stub debugs the image; JAL_TEST_EMU_ARGS="--fw native" runs the integration tests
// natively, where there is nothing for it to debug.
bool emu_runs_native()
{
    const char* extra = std::getenv("JAL_TEST_EMU_ARGS");
    return extra && std::string(extra).find("native") != std::string::npos;
}

#define REQUIRE_IMAGE()                                                                      \
    if (emu_runs_native())                                                                   \
        GTEST_SKIP() << "JAL_TEST_EMU_ARGS runs the firmware natively; the GDB stub debugs " \
                        "the image";

#define REQUIRE_GDB()                                                                         \
    REQUIRE_IMAGE();                                                                          \
    const std::string gdb = find_gdb();                                                       \
    if (gdb.empty())                                                                          \
        GTEST_SKIP() << "gdb-multiarch is not installed (scripts/setup.sh installs it); the " \
                        "GDB stub's end-to-end tests need it";

// The port chip `chip`'s stub bound (--gdb 0 logs it).
int stub_port(const EmuProcess& emu, unsigned chip = 0)
{
    const std::regex line("chip" + std::to_string(chip) +
                          ": gdb remote stub on 127\\.0\\.0\\.1:([0-9]+)");
    std::smatch m;
    const std::string out = emu.output();
    if (!std::regex_search(out, m, line)) return -1;
    return std::stoi(m[1]);
}

std::unique_ptr<EmuProcess> start_emu(std::vector<std::string> args, unsigned chips = 1)
{
    args.insert(args.begin(), {"--fw", "image", "--gdb", "0"});
    jal::test::EmuOptions options;
    options.chips = chips;
    options.extra_args = std::move(args);
    return std::make_unique<EmuProcess>(options);
}

struct GdbRun {
    jal::test::CommandResult result;
    std::map<std::string, std::uint64_t> values;  // KEY=0x... lines the script printed
};

// Runs gdb-multiarch in batch mode on the firmware ELF, connected to `port`, with
// `commands`; collects every "KEY=0xVALUE" token the commands printed.
GdbRun run_gdb(const std::string& gdb, int port, const std::vector<std::string>& commands)
{
    // gdb gives up on a reply after 2 s by default; a loaded CI machine under ASan may need
    // longer to answer the first request (a halt to wait for).
    std::vector<std::string> argv = {gdb, "-q", "-nx", "-batch"};
    for (const char* setting : {"set pagination off", "set confirm off", "set remotetimeout 60"}) {
        argv.push_back("-ex");
        argv.push_back(setting);
    }
    argv.push_back("-ex");
    argv.push_back("target remote 127.0.0.1:" + std::to_string(port));
    for (const auto& c : commands) {
        argv.push_back("-ex");
        argv.push_back(c);
    }
    argv.push_back(jal::test::bin_path("jal-fw.elf"));
    GdbRun run{jal::test::run_command(argv, {}, std::chrono::seconds(120)), {}};
    static const std::regex token("([A-Z_0-9]+)=0x([0-9a-f]+)");
    const std::string& out = run.result.out;
    for (std::sregex_iterator it(out.begin(), out.end(), token), end; it != end; ++it)
        run.values[(*it)[1]] = std::stoull((*it)[2], nullptr, 16);
    return run;
}

std::string print(const std::string& key, const std::string& expr)
{
    return "printf \"" + key + "=%#x\\n\", " + expr;
}

void expect_ready(EmuProcess& emu, unsigned chip = 0)
{
    jal::ChipFunction dev = jal::ChipFunction::open(chip, emu.open_options());
    const jal::DeviceStatus s = dev.wait_ready(jal::test::kBootTimeout);
    EXPECT_EQ(s.state, jal::DeviceState::ready) << emu.output();
}

const std::string kHarvest = "jal::fw::slices::SliceManager::harvest";
const std::string kHbmTraining = "jal::fw::Firmware::step_hbm_training";

TEST(GdbStub, BreakReadStepContinueThenTheChipBoots)
{
    REQUIRE_GDB();
    auto emu = start_emu({"--gdb-wait"});
    const int port = stub_port(*emu);
    ASSERT_GT(port, 0) << emu->output();
    const GdbRun run = run_gdb(
        gdb, port,
        {// Held at reset: the PC is the reset vector's handler.
         print("RESET_PC", "$pc"), print("RESET_HANDLER", "(unsigned)jalfw_reset_handler"),
         print("VECTOR_PC", "*(unsigned*)4"), print("VECTOR_SP", "*(unsigned*)0"),
         print("STACK_TOP", "(unsigned)&_stack_top"),
         // A boot function: the breakpoint stops exactly at its first instruction.
         "break *" + kHarvest, "continue", print("BREAK_PC", "$pc"),
         print("HARVEST", "(unsigned)" + kHarvest), print("BREAK_SP", "$sp"), "info registers",
         // r12 is scratch at a call boundary: writing it cannot change what the firmware does.
         "set $r12 = 0xdeadbeef", print("R12", "$r12"),
         // SRAM above the stack is unused.
         "set var *(unsigned*)&_stack_top = 0x1badcafe",
         print("SCRATCH", "*(unsigned*)&_stack_top"), "stepi", print("STEP_PC", "$pc"),
         // Continuing from a breakpoint runs on to the next one (a later boot step).
         "break *" + kHbmTraining, "continue", print("SECOND_PC", "$pc"),
         print("HBM_TRAINING", "(unsigned)" + kHbmTraining), "delete", "info breakpoints",
         "detach"});
    const auto& v = run.values;
    ASSERT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
    ASSERT_TRUE(v.count("RESET_PC") && v.count("SECOND_PC")) << run.result.out << run.result.err;
    EXPECT_EQ(v.at("RESET_PC"), v.at("RESET_HANDLER"));
    EXPECT_EQ(v.at("VECTOR_PC"), v.at("RESET_HANDLER") | 1);  // flash holds the vector table
    EXPECT_EQ(v.at("VECTOR_SP"), v.at("STACK_TOP"));
    EXPECT_EQ(v.at("BREAK_PC"), v.at("HARVEST"));
    EXPECT_GE(v.at("BREAK_SP"), 0x20000000u);
    EXPECT_LT(v.at("BREAK_SP"), v.at("STACK_TOP"));
    EXPECT_EQ(v.at("R12"), 0xdeadbeefu);
    EXPECT_EQ(v.at("SCRATCH"), 0x1badcafeu);
    // One Thumb instruction: 2 or 4 bytes on.
    EXPECT_TRUE(v.at("STEP_PC") == v.at("BREAK_PC") + 2 || v.at("STEP_PC") == v.at("BREAK_PC") + 4)
        << std::hex << v.at("STEP_PC");
    EXPECT_EQ(v.at("SECOND_PC"), v.at("HBM_TRAINING"));
    EXPECT_NE(run.result.out.find("Breakpoint 1, " + kHarvest), std::string::npos)
        << run.result.out;
    EXPECT_NE(run.result.out.find("xpsr"), std::string::npos) << run.result.out;
    EXPECT_NE(run.result.out.find("No breakpoints or watchpoints."), std::string::npos)
        << run.result.out;
    // Detaching leaves the chip running: it finishes booting.
    expect_ready(*emu);
    EXPECT_NE(emu->output().find("chip0: gdb detached; the core runs on"), std::string::npos);
    EXPECT_EQ(emu->stop(), "");
}

TEST(GdbStub, AFaultStopsWithSigsegvAtTheFaultingInstruction)
{
    REQUIRE_GDB();
    auto emu = start_emu({"--gdb-wait"});
    const int port = stub_port(*emu);
    ASSERT_GT(port, 0) << emu->output();
    // At harvest's entry r0 is `this`; pointing it outside memory makes its first load fault.
    const GdbRun run = run_gdb(gdb, port,
                               {"break *" + kHarvest, "continue", "set $r0 = 0x60000000",
                                "continue", print("FAULT_PC", "$pc"), print("FAULT_R0", "$r0"),
                                print("HARVEST", "(unsigned)" + kHarvest), "detach"});
    ASSERT_EQ(run.result.exit_code, 0) << run.result.out << run.result.err;
    EXPECT_NE(run.result.out.find("Program received signal SIGSEGV"), std::string::npos)
        << run.result.out;
    const auto& v = run.values;
    ASSERT_TRUE(v.count("FAULT_PC") && v.count("HARVEST")) << run.result.out;
    EXPECT_EQ(v.at("FAULT_R0"), 0x60000000u);
    // Exact: inside harvest, past its entry (the stack push ran, the load did not).
    EXPECT_GT(v.at("FAULT_PC"), v.at("HARVEST"));
    EXPECT_LT(v.at("FAULT_PC"), v.at("HARVEST") + 16);
    // The log has the faulting frame's registers.
    EXPECT_NE(emu->output().find("fault registers: r0=0x60000000"), std::string::npos)
        << emu->output();
    // Detached, the core faults again with nobody to hold it; the watchdog the firmware
    // armed before harvest resets it, and the next boot reaches READY.
    expect_ready(*emu);
    fwtest::ConsoleClient console(emu->socket_dir() + "/jal0.console");
    const nlohmann::json status = console.ask("status");
    EXPECT_EQ(status["reset_cause"], "watchdog") << status.dump();
    EXPECT_EQ(status["reset_cause_code"], 2) << status.dump();  // JAL_RESET_CAUSE_WATCHDOG
    EXPECT_EQ(emu->stop(), "");
}

// A minimal protocol client: what gdb-multiarch in batch mode cannot send.
class RspClient {
public:
    explicit RspClient(int port)
    {
        fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<std::uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
            throw std::runtime_error("cannot connect to the stub");
    }
    ~RspClient() { close(fd_); }
    RspClient(const RspClient&) = delete;
    RspClient& operator=(const RspClient&) = delete;

    void send_raw(const std::string& bytes)
    {
        ASSERT_EQ(send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(bytes.size()));
    }
    void send_packet(const std::string& payload)
    {
        unsigned sum = 0;
        for (char c : payload) sum += static_cast<unsigned char>(c);
        char cs[3];
        std::snprintf(cs, sizeof cs, "%02x", sum & 0xff);
        send_raw("$" + payload + "#" + cs);
    }
    // The next byte that is not part of a packet ('+' or '-'), or the next packet's payload
    // ("$" prefixed); "" on timeout or close.
    std::string next(std::chrono::seconds timeout = std::chrono::seconds(60))
    {
        for (;;) {
            if (!buf_.empty() && buf_[0] != '$') {
                std::string b(1, buf_[0]);
                buf_.erase(0, 1);
                return b;
            }
            const auto hash = buf_.find('#');
            if (hash != std::string::npos && buf_.size() >= hash + 3) {
                std::string p = buf_.substr(0, hash);
                buf_.erase(0, hash + 3);
                return p;
            }
            pollfd p{fd_, POLLIN, 0};
            if (poll(&p, 1, static_cast<int>(timeout.count() * 1000)) != 1) return {};
            char chunk[4096];
            const ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
            if (n <= 0) return {};
            buf_.append(chunk, static_cast<std::size_t>(n));
        }
    }
    // Sends a packet and returns its reply's payload, checking the '+' before it.
    std::string ask(const std::string& payload)
    {
        send_packet(payload);
        EXPECT_EQ(next(), "+");
        const std::string reply = next();
        EXPECT_FALSE(reply.empty()) << "no reply to " << payload;
        return reply.empty() ? reply : reply.substr(1);
    }

private:
    int fd_ = -1;
    std::string buf_;
};

TEST(GdbStub, InterruptHoldsABootedCoreAndTimeStandsStill)
{
    REQUIRE_IMAGE();
    auto emu = start_emu({});
    const int port = stub_port(*emu);
    ASSERT_GT(port, 0) << emu->output();
    // With --gdb and no debugger the chip boots as usual.
    expect_ready(*emu);
    fwtest::ConsoleClient console(emu->socket_dir() + "/jal0.console");
    {
        RspClient c(port);
        // Connecting halts the running core, as QEMU's stub does.
        EXPECT_EQ(c.ask("?"), "S02");
        // Held: modelled time stands still (no tick, no watchdog), the console still answers.
        const nlohmann::json held = console.ask("regs");
        ASSERT_TRUE(held.contains("registers")) << held.dump();
        EXPECT_TRUE(held["held_by_debugger"].get<bool>());
        const auto t0 = console.ask("status")["modelled_us"].get<std::uint64_t>();
        const std::string g = c.ask("g");
        EXPECT_EQ(g.size(), 17u * 8) << g;
        EXPECT_EQ(console.ask("status")["modelled_us"].get<std::uint64_t>(), t0);
        // The PC the console shows is the one gdb sees (register 15, little-endian hex).
        const std::string pc = held["registers"]["pc"].get<std::string>();
        const auto pc_value = static_cast<std::uint32_t>(std::stoul(pc, nullptr, 16));
        char le[16];
        std::snprintf(le, sizeof le, "%02x%02x%02x%02x", pc_value & 0xff, (pc_value >> 8) & 0xff,
                      (pc_value >> 16) & 0xff, pc_value >> 24);
        EXPECT_EQ(g.substr(15 * 8, 8), le);
        // Malformed input gets an error, not a crash: a bad checksum a '-', bad arguments E01.
        c.send_raw("$g#00");
        EXPECT_EQ(c.next(), "-");
        EXPECT_EQ(c.ask("mzz,4"), "E01");
        EXPECT_EQ(c.ask("m40000000,4"), "E01");  // peripherals: not through the debugger
        // Continue, then Ctrl-C: the running core halts with SIGINT.
        c.send_packet("c");
        EXPECT_EQ(c.next(), "+");
        c.send_raw("\x03");
        EXPECT_EQ(c.next(), "$S02");
        EXPECT_EQ(c.ask("D"), "OK");
    }
    // Detached, the core runs on: time moves again and the chip still serves its host.
    expect_ready(*emu);
    const nlohmann::json after = console.ask("regs");
    EXPECT_FALSE(after["held_by_debugger"].get<bool>()) << after.dump();
    EXPECT_EQ(emu->stop(), "");
}

TEST(GdbStub, EachChipHasAStubOfItsOwn)
{
    REQUIRE_IMAGE();
    auto emu = start_emu({"--gdb-wait"}, 2);
    const int port0 = stub_port(*emu, 0), port1 = stub_port(*emu, 1);
    ASSERT_GT(port0, 0) << emu->output();
    ASSERT_GT(port1, 0) << emu->output();
    EXPECT_NE(port0, port1);
    // Chip 1 is released; chip 0 stays held at reset until its own debugger lets it go.
    {
        RspClient c(port1);
        EXPECT_EQ(c.ask("?"), "S05");
        EXPECT_EQ(c.ask("D"), "OK");
    }
    expect_ready(*emu, 1);
    fwtest::ConsoleClient console0(emu->socket_dir() + "/jal0.console");
    const nlohmann::json held = console0.ask("regs");
    EXPECT_TRUE(held["held_by_debugger"].get<bool>()) << held.dump();
    EXPECT_EQ(console0.ask("status")["modelled_us"].get<std::uint64_t>(), 0u);
    {
        RspClient c(port0);
        EXPECT_EQ(c.ask("D"), "OK");
    }
    expect_ready(*emu, 0);
    EXPECT_EQ(emu->stop(), "");
}

TEST(GdbStub, GdbNeedsTheFirmwareImage)
{
    const auto r =
        jal::test::run_command({jal::test::bin_path("jal-emu"), "--fw", "native", "--gdb", "1234"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--gdb debugs the firmware image"), std::string::npos) << r.err;
    const auto w = jal::test::run_command({jal::test::bin_path("jal-emu"), "--gdb-wait"});
    EXPECT_EQ(w.exit_code, 2);
    EXPECT_NE(w.err.find("--gdb-wait needs --gdb PORT"), std::string::npos) << w.err;
}

}  // namespace
