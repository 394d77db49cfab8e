// jalctl's monitoring commands against a real jal-emu: dmon, log --follow, -d all, and the
// utilisation, clock and memory fields of telemetry.
#include <gtest/gtest.h>

#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "fixture/emu_process.hpp"
#include "fixture/run_command.hpp"

namespace {

using jal::test::CommandResult;
using nlohmann::json;

const std::string kBootWait = std::to_string(jal::test::kBootTimeout.count());

std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

// A jalctl that keeps running (log --follow): its stdout is read line by line as it comes.
class RunningJalctl {
public:
    RunningJalctl(const std::vector<std::string>& args, const std::string& env)
    {
        int fds[2];
        if (::pipe(fds) != 0) throw std::runtime_error("pipe");
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(fds[1], 1);
            ::close(fds[0]);
            ::close(fds[1]);
            ::putenv(const_cast<char*>(env.c_str()));
            std::vector<char*> argv;
            std::string bin = jal::test::bin_path("jalctl");
            argv.push_back(bin.data());
            for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
            argv.push_back(nullptr);
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        ::close(fds[1]);
        fd_ = fds[0];
    }
    ~RunningJalctl()
    {
        if (pid_ > 0) (void)stop();
        if (fd_ >= 0) ::close(fd_);
    }

    // Reads lines until one satisfies `want`; false if the output ends first or nothing
    // matches within `limit` (a bound on a broken run, not a timing assertion).
    bool wait_for_line(const std::function<bool(const std::string&)>& want,
                       std::chrono::seconds limit = jal::test::kBootTimeout)
    {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        for (;;) {
            for (size_t nl; (nl = buffer_.find('\n')) != std::string::npos;) {
                std::string line = buffer_.substr(0, nl);
                buffer_.erase(0, nl + 1);
                seen_.push_back(line);
                if (want(line)) return true;
            }
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) return false;
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
            char chunk[4096];
            ssize_t n = ::read(fd_, chunk, sizeof chunk);
            if (n <= 0) return false;
            buffer_.append(chunk, static_cast<size_t>(n));
        }
    }

    // SIGTERM; returns the exit status (-1 if it died of a signal).
    int stop()
    {
        ::kill(pid_, SIGTERM);
        int status = 0;
        ::waitpid(pid_, &status, 0);
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }

    const std::vector<std::string>& seen() const { return seen_; }

private:
    pid_t pid_ = -1;
    int fd_ = -1;
    std::string buffer_;
    std::vector<std::string> seen_;
};

class JalctlMonitorTest : public jal::test::EmuTest {
protected:
    CommandResult jalctl(std::vector<std::string> args)
    {
        args.insert(args.begin(), jal::test::bin_path("jalctl"));
        return jal::test::run_command(args, {emu().env()});
    }
    json jalctl_json(std::vector<std::string> args)
    {
        args.push_back("--json");
        CommandResult r = jalctl(args);
        EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
        try {
            return json::parse(r.out);
        } catch (const json::parse_error& e) {
            ADD_FAILURE() << "not one JSON document: " << e.what() << "\n" << r.out;
            return json();
        }
    }
};

TEST_F(JalctlMonitorTest, TelemetryHasUtilisationClocksAndMemory)
{
    json t = jalctl_json({"telemetry", "--wait", kBootWait});
    for (const char* key : {"utilisation_percent", "slices_busy", "clock_min_mhz", "clock_max_mhz",
                            "retired_pages", "ecc_corrected", "ecc_uncorrected"})
        EXPECT_TRUE(t[key].is_number()) << key;
    EXPECT_EQ(t["utilisation_percent"], 0.0) << "nothing runs on an idle chip";
    EXPECT_LT(t["clock_min_mhz"].get<int>(), t["clock_max_mhz"].get<int>());
    EXPECT_EQ(t["memory"]["total_bytes"], 216ull << 30);
    EXPECT_EQ(t["memory"]["used_bytes"], 0);
}

TEST_F(JalctlMonitorTest, HbmReportsEccPerChannel)
{
    json h = jalctl_json({"hbm", "--wait", kBootWait});
    ASSERT_EQ(h["channels"].size(), 192u);
    for (const json& c : h["channels"]) {
        // A healthy chip with no injected errors: real counters, all zero.
        EXPECT_EQ(c["ecc_corrected"], 0) << c["channel"];
        EXPECT_EQ(c["ecc_uncorrected"], 0) << c["channel"];
        EXPECT_EQ(c["retired_pages"], 0) << c["channel"];
    }
    CommandResult text = jalctl({"hbm"});
    EXPECT_NE(text.out.find("ECC CORR"), std::string::npos);
    EXPECT_NE(text.out.find("0 pages retired"), std::string::npos) << text.out;
}

TEST_F(JalctlMonitorTest, DmonPrintsOneLinePerSample)
{
    jalctl_json({"info", "--wait", kBootWait});
    CommandResult r = jalctl({"dmon", "--count", "3", "--interval", "0.05"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto lines = lines_of(r.out);
    ASSERT_EQ(lines.size(), 4u) << r.out;
    EXPECT_EQ(lines[0].rfind("# dev", 0), 0u) << lines[0];
    for (size_t i = 1; i < lines.size(); i++)
        EXPECT_EQ(lines[i].substr(0, 7), "    0  ") << lines[i];

    CommandResult j = jalctl({"dmon", "--count", "2", "--interval", "0.05", "--json"});
    ASSERT_EQ(j.exit_code, 0) << j.err;
    auto docs = lines_of(j.out);
    ASSERT_EQ(docs.size(), 2u) << j.out;
    for (size_t i = 0; i < docs.size(); i++) {
        json s = json::parse(docs[i]);
        EXPECT_EQ(s["sample"], i);
        EXPECT_EQ(s["device"], 0);
        for (const char* key : {"power_w", "temp_c", "clock_mhz", "utilisation_percent",
                                "memory_used_bytes", "ecc_corrected"})
            EXPECT_TRUE(s[key].is_number()) << key;
        EXPECT_TRUE(s["limiter"].is_string());
    }
}

TEST_F(JalctlMonitorTest, BadDmonArgumentsAreUsageErrors)
{
    EXPECT_EQ(jalctl({"dmon", "--interval", "0"}).exit_code, 2);
    EXPECT_EQ(jalctl({"dmon", "--count", "x"}).exit_code, 2);
    EXPECT_EQ(jalctl({"log", "--follow", "--post"}).exit_code, 2);
}

TEST_F(JalctlMonitorTest, LogFollowPrintsNewEventsAsTheyArrive)
{
    jalctl_json({"info", "--wait", kBootWait});
    RunningJalctl follow({"log", "--follow", "--json", "--interval", "0.05"}, emu().env());
    // The boot's events first...
    ASSERT_TRUE(follow.wait_for_line(
        [](const std::string& l) { return l.find("\"boot_done\"") != std::string::npos; }));
    // ...then one that happens while it follows.
    ASSERT_EQ(jalctl({"power", "set", "432"}).exit_code, 0);
    json seen;
    ASSERT_TRUE(follow.wait_for_line([&](const std::string& l) {
        json e = json::parse(l);
        if (e["name"] != "power_limit_set") return false;
        seen = e;
        return true;
    })) << "seen: "
        << follow.seen().size() << " lines";
    EXPECT_EQ(seen["fields"]["limit_w"], 432.0);
    EXPECT_EQ(follow.stop(), 0);
    for (const auto& line : follow.seen()) EXPECT_NO_THROW(json::parse(line)) << line;
}

class JalctlLoadedTest : public JalctlMonitorTest {
protected:
    jal::test::EmuOptions emu_options() const override
    {
        jal::test::EmuOptions o;
        o.extra_args = {"--load-watts", "650"};
        return o;
    }
};

TEST_F(JalctlLoadedTest, PowerCapUnderTheDrawRampsTheClockInsteadOfAnEmergency)
{
    json before = jalctl_json({"telemetry", "--wait", kBootWait});
    ASSERT_GT(before["power_w"].get<double>(), 400.0) << "the synthetic load draws";
    EXPECT_GT(before["utilisation_percent"].get<double>(), 0.0);
    ASSERT_EQ(jalctl_json({"power", "set", "300"})["power_limit_w"], 300.0);
    // Wait (bounded) until the limiter has brought the draw under the new cap.
    json t;
    const auto deadline = std::chrono::steady_clock::now() + jal::test::kBootTimeout;
    do {
        t = jalctl_json({"telemetry"});
    } while (t["power_w"].get<double>() > 300.0 && std::chrono::steady_clock::now() < deadline);
    EXPECT_LE(t["power_w"].get<double>(), 300.0);
    EXPECT_EQ(t["emergency_events"], before["emergency_events"]) << "no emergency";
    EXPECT_GT(t["clock_mhz"].get<int>(), t["clock_min_mhz"].get<int>());
    json log = jalctl_json({"log"});
    for (const json& e : log["events"]) EXPECT_NE(e["name"], "power_emergency") << e.dump();
}

TEST_F(JalctlMonitorTest, PersistentPowerLimitSurvivesAReset)
{
    const std::string wait = kBootWait;
    json set = jalctl_json({"power", "set", "450", "--persist", "--wait", wait});
    EXPECT_EQ(set["persistent"], true);
    EXPECT_EQ(jalctl_json({"reset", "--timeout", wait})["came_back"], true);
    json get = jalctl_json({"power", "get", "--wait", wait});
    EXPECT_EQ(get["power_limit_w"], 450.0);
    EXPECT_EQ(get["persistent_limit_w"], 450.0);
    EXPECT_EQ(jalctl_json({"telemetry"})["power_limit_w"], 450.0);

    // A plain set lasts until the reset, which returns to the persistent limit.
    jalctl_json({"power", "set", "400"});
    jalctl_json({"reset", "--timeout", wait});
    EXPECT_EQ(jalctl_json({"power", "get", "--wait", wait})["power_limit_w"], 450.0);

    // Cleared: the next boot starts at the TDP.
    EXPECT_TRUE(jalctl_json({"power", "clear"})["persistent_limit_w"].is_null());
    jalctl_json({"reset", "--timeout", wait});
    json after = jalctl_json({"power", "get", "--wait", wait});
    EXPECT_EQ(after["power_limit_w"], after["tdp_w"]);
    EXPECT_TRUE(after["persistent_limit_w"].is_null());
}

class JalctlTwoChipsTest : public JalctlMonitorTest {
protected:
    jal::test::EmuOptions emu_options() const override
    {
        jal::test::EmuOptions o;
        o.chips = 2;
        return o;
    }
};

TEST_F(JalctlTwoChipsTest, AllDevicesRunsOnEach)
{
    json info = jalctl_json({"info", "-d", "all", "--wait", kBootWait});
    ASSERT_EQ(info["devices"].size(), 2u);
    EXPECT_EQ(info["devices"][0]["device"], 0);
    EXPECT_EQ(info["devices"][1]["device"], 1);
    EXPECT_EQ(info["devices"][1]["state"], "ready");

    CommandResult health = jalctl({"health", "-d", "all"});
    EXPECT_EQ(health.exit_code, 0) << health.out << health.err;
    EXPECT_NE(health.out.find("== device 1 =="), std::string::npos) << health.out;

    CommandResult dmon = jalctl({"dmon", "-d", "all", "--count", "2", "--interval", "0.05"});
    ASSERT_EQ(dmon.exit_code, 0) << dmon.err;
    EXPECT_EQ(lines_of(dmon.out).size(), 1u + 2 * 2) << dmon.out;

    // Commands that change a device take one at a time.
    CommandResult reset = jalctl({"reset", "-d", "all"});
    EXPECT_EQ(reset.exit_code, 2);
    EXPECT_NE(reset.err.find("one device at a time"), std::string::npos) << reset.err;
    EXPECT_EQ(jalctl({"info", "-d", "one"}).exit_code, 2);
}

}  // namespace
