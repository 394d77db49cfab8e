#include "host_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <random>
#include <sys/utsname.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <fmt/format.h>

#include <jal/jal.hpp>

namespace jal::bench {

namespace {

using clock_type = std::chrono::steady_clock;
using namespace jal::runtime;
namespace fs = std::filesystem;

constexpr auto kWait = std::chrono::seconds(120);

double seconds_since(clock_type::time_point t0)
{
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

double percentile(std::vector<double> v, double p)
{
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
    return v[i];
}

void done_or_throw(const WaitResult& r, const char* what)
{
    if (!r.satisfied)
        throw jal::Error(JAL_STATUS_TIMEOUT,
                         std::string(what) + ": no completion within the benchmark's wait");
    if (r.status != JAL_STATUS_OK)
        throw jal::Error(r.status, std::string(what) + " failed on the device");
}

struct Bench {
    const HostBenchOptions& o;
    Device dev;
    Context ctx;

    explicit Bench(const HostBenchOptions& options)
        : o(options), dev(options.device, options.emu_dir), ctx(dev)
    {}

    void note(const std::string& s) const
    {
        if (!o.quiet) std::fprintf(stderr, "jal-bench: %s\n", s.c_str());
    }

    nlohmann::json roundtrip(jal_wait_mode mode)
    {
        Queue q(ctx, 64);
        Signal s(dev, 1, mode != JAL_WAIT_POLL);
        std::vector<double> us;
        us.reserve(o.roundtrips);
        for (uint64_t i = 0; i < o.roundtrips + 200; i++) {
            s.store(1);
            auto t0 = clock_type::now();
            q.nop(&s);
            done_or_throw(s.wait_zero(kWait, mode), "no-op");
            if (i >= 200)  // warm-up
                us.push_back(seconds_since(t0) * 1e6);
        }
        return {{"p50_us", percentile(us, 0.5)},
                {"p99_us", percentile(us, 0.99)},
                {"min_us", percentile(us, 0)},
                {"samples", us.size()}};
    }

    // Packets/s from `producers` threads into one queue; also when all had completed.
    nlohmann::json submit_rate(unsigned producers)
    {
        Queue q(ctx, 65536);
        Signal fin(dev, 1, false);
        // Warm the ring and the engine.
        for (int i = 0; i < 100000; i++) q.nop();
        q.nop(&fin);
        done_or_throw(fin.wait_zero(kWait, JAL_WAIT_POLL), "warm-up");
        uint64_t each = o.submit_packets / producers;
        std::atomic<unsigned> ready{0};
        std::atomic<bool> go{false};
        std::vector<std::thread> threads;
        for (unsigned t = 0; t < producers; t++)
            threads.emplace_back([&] {
                ready++;
                while (!go.load()) std::this_thread::yield();
                for (uint64_t i = 0; i < each; i++) q.nop();
            });
        while (ready.load() < producers) std::this_thread::yield();
        auto t0 = clock_type::now();
        go = true;
        for (auto& t : threads) t.join();
        double submitted = seconds_since(t0);
        fin.store(1);
        q.nop(&fin);
        done_or_throw(fin.wait_zero(kWait, JAL_WAIT_POLL), "last no-op");
        double completed = seconds_since(t0);
        double n = static_cast<double>(each * producers);
        return {{"packets", each * producers},
                {"submit_mpps", n / submitted / 1e6},
                {"complete_mpps", n / completed / 1e6}};
    }

    nlohmann::json copies()
    {
        const uint64_t max = o.max_copy_bytes;
        HostBuffer a(dev, max), b(dev, max);
        Memory m(ctx, max, JAL_PLACE_INTERLEAVED, 0xffff);
        std::memset(a.data(), 0x5a, max);
        std::memset(b.data(), 0xa5, max);
        Queue q(ctx, 4096);
        nlohmann::json rows = nlohmann::json::array();
        for (uint64_t size = 4096; size <= max; size *= 4) {
            uint64_t iters = std::clamp<uint64_t>((1ull << 30) / size, 4, 4000);
            // Large copies are waited for by sleeping: a spinning host would take a CPU
            // from the emulator doing the copy.
            const jal_wait_mode mode = size >= (1u << 20) ? JAL_WAIT_HYBRID : JAL_WAIT_POLL;
            auto device_rate = [&](jal_copy_dir dir) {
                Signal s(dev, 1, true);
                auto one = [&] {
                    if (dir == JAL_COPY_H2D)
                        q.copy_to_device(m.va(), a, 0, size, &s);
                    else
                        q.copy_to_host(b, 0, m.va(), size, &s);
                };
                one();  // warm-up
                done_or_throw(s.wait_zero(kWait, mode), "copy");
                s.store(static_cast<int64_t>(iters));
                auto t0 = clock_type::now();
                for (uint64_t i = 0; i < iters; i++) one();
                done_or_throw(s.wait_zero(kWait, mode), "copy");
                return static_cast<double>(size * iters) / seconds_since(t0) / 1e9;
            };
            double h2d = device_rate(JAL_COPY_H2D);
            double d2h = device_rate(JAL_COPY_D2H);
            std::memcpy(b.data(), a.data(), size);
            auto t0 = clock_type::now();
            for (uint64_t i = 0; i < iters; i++) {
                std::memcpy(b.data(), a.data(), size);
                asm volatile("" ::: "memory");
            }
            double mc = static_cast<double>(size * iters) / seconds_since(t0) / 1e9;
            rows.push_back({{"bytes", size},
                            {"h2d_gbps", h2d},
                            {"d2h_gbps", d2h},
                            {"memcpy_gbps", mc},
                            {"h2d_vs_memcpy", h2d / mc},
                            {"d2h_vs_memcpy", d2h / mc}});
            note(fmt::format("copy {:>9} B: H2D {:.2f} GB/s, D2H {:.2f} GB/s, memcpy {:.2f} GB/s",
                             size, h2d, d2h, mc));
        }
        return rows;
    }

    nlohmann::json load()
    {
        std::string path = o.file;
        bool generated = path.empty();
        if (generated) {
            path = (fs::temp_directory_path() / ("jal-bench-load-" + std::to_string(::getpid())))
                       .string();
            std::ofstream out(path, std::ios::binary);
            std::vector<char> chunk(1 << 20);
            std::mt19937_64 rng(1);
            for (auto& c : chunk) c = static_cast<char>(rng());
            for (uint64_t done = 0; done < o.file_bytes; done += chunk.size())
                out.write(chunk.data(), static_cast<std::streamsize>(
                                            std::min<uint64_t>(chunk.size(), o.file_bytes - done)));
            out.close();
            int fd = ::open(path.c_str(), O_RDONLY);
            if (fd >= 0) {
                ::fsync(fd);
                ::close(fd);
            }
        }
        uint64_t bytes = fs::file_size(path);
        nlohmann::json out = {{"file_bytes", bytes}, {"file_generated", generated}};
        try {
            auto t0 = clock_type::now();
            std::string cmd = "cat '" + path + "' > /dev/null";
            if (std::system(cmd.c_str()) != 0) throw std::runtime_error("cat failed");
            out["cat_gbps"] = static_cast<double>(bytes) / seconds_since(t0) / 1e9;
            Memory m(ctx, bytes, JAL_PLACE_INTERLEAVED, 0xffff);
            Queue q(ctx, 256);
            for (bool direct : {false, true}) {
                auto t1 = clock_type::now();
                auto r = q.load_file(path, m.va(), m.size(), {}, direct ? 0 : JAL_LOAD_NO_DIRECT);
                double gbps = static_cast<double>(r.bytes) / seconds_since(t1) / 1e9;
                out[direct ? "load_direct_gbps" : "load_buffered_gbps"] = gbps;
                if (direct) out["direct_io_used"] = r.direct_io;
            }
            out["load_vs_cat"] =
                out["load_buffered_gbps"].get<double>() / out["cat_gbps"].get<double>();
        } catch (...) {
            if (generated) fs::remove(path);
            throw;
        }
        if (generated) fs::remove(path);
        return out;
    }
};

std::string cpu_model()
{
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);)
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "unknown";
}

}  // namespace

nlohmann::json run_host_bench(const HostBenchOptions& o)
{
    Bench b(o);
    nlohmann::json doc;
    utsname u{};
    ::uname(&u);
    doc["machine"] = {{"cpu", cpu_model()},
                      {"cpus", std::thread::hardware_concurrency()},
                      {"kernel", std::string(u.sysname) + " " + u.release}};

    b.note("no-op round trips, polling");
    auto poll = b.roundtrip(JAL_WAIT_POLL);
    b.note("no-op round trips, interrupts");
    auto irq = b.roundtrip(JAL_WAIT_INTERRUPT);
    b.note("no-op round trips, hybrid");
    auto hybrid = b.roundtrip(JAL_WAIT_HYBRID);
    doc["roundtrip"] = {{"poll", poll}, {"interrupt", irq}, {"hybrid", hybrid}};
    doc["roundtrip_poll_p50_us"] = poll["p50_us"];
    doc["roundtrip_poll_p99_us"] = poll["p99_us"];
    doc["roundtrip_irq_p50_us"] = irq["p50_us"];
    doc["roundtrip_irq_p99_us"] = irq["p99_us"];

    b.note("submission rate, 1 producer");
    auto s1 = b.submit_rate(1);
    b.note("submission rate, 2 producers");
    auto s2 = b.submit_rate(2);
    doc["submit"] = {{"producers_1", s1}, {"producers_2", s2}};
    doc["submit_mpps_1"] = s1["submit_mpps"];
    doc["submit_mpps_2"] = s2["submit_mpps"];

    b.note("copy bandwidth");
    auto rows = b.copies();
    doc["copy"] = rows;
    for (auto& r : rows)
        if (r["bytes"] == (64ull << 20)) {
            doc["copy_h2d_vs_memcpy"] = r["h2d_vs_memcpy"];
            doc["copy_d2h_vs_memcpy"] = r["d2h_vs_memcpy"];
        }

    b.note("file load");
    doc["load"] = b.load();
    return doc;
}

std::string format_host_table(const nlohmann::json& d)
{
    std::string s;
    auto line = [&](const std::string& l) { s += l + "\n"; };
    line(fmt::format("machine: {} ({} CPUs), {}", d["machine"]["cpu"].get<std::string>(),
                     d["machine"]["cpus"].get<unsigned>(),
                     d["machine"]["kernel"].get<std::string>()));
    if (d.contains("emulator")) line("device:  " + d["emulator"].get<std::string>());
    line("");
    line("no-op round trip        p50 us    p99 us    min us");
    for (auto [name, key] :
         {std::pair{"polling", "poll"}, {"interrupt", "interrupt"}, {"hybrid", "hybrid"}}) {
        auto& r = d["roundtrip"][key];
        line(fmt::format("  {:<20} {:>8.2f}  {:>8.2f}  {:>8.2f}", name, r["p50_us"].get<double>(),
                         r["p99_us"].get<double>(), r["min_us"].get<double>()));
    }
    line("");
    line("submission (no-ops into one queue)   submitted Mpkt/s   completed Mpkt/s");
    for (auto [name, key] :
         {std::pair{"1 producer", "producers_1"}, {"2 producers", "producers_2"}}) {
        auto& r = d["submit"][key];
        line(fmt::format("  {:<34} {:>16.2f}   {:>16.2f}", name, r["submit_mpps"].get<double>(),
                         r["complete_mpps"].get<double>()));
    }
    line("");
    line("copy size     H2D GB/s   D2H GB/s   memcpy GB/s   H2D/memcpy   D2H/memcpy");
    for (auto& r : d["copy"]) {
        uint64_t b = r["bytes"];
        std::string size =
            b >= (1u << 20) ? fmt::format("{} MiB", b >> 20) : fmt::format("{} KiB", b >> 10);
        line(fmt::format("  {:<10} {:>9.2f}  {:>9.2f}  {:>12.2f}  {:>11.2f}  {:>11.2f}", size,
                         r["h2d_gbps"].get<double>(), r["d2h_gbps"].get<double>(),
                         r["memcpy_gbps"].get<double>(), r["h2d_vs_memcpy"].get<double>(),
                         r["d2h_vs_memcpy"].get<double>()));
    }
    auto& l = d["load"];
    line("");
    line(fmt::format("file -> device ({} MiB)", l["file_bytes"].get<uint64_t>() >> 20));
    line(fmt::format("  cat FILE > /dev/null       {:>8.2f} GB/s", l["cat_gbps"].get<double>()));
    line(fmt::format("  jal_load_file, buffered    {:>8.2f} GB/s  ({:.2f}x cat)",
                     l["load_buffered_gbps"].get<double>(), l["load_vs_cat"].get<double>()));
    line(fmt::format(
        "  jal_load_file, O_DIRECT    {:>8.2f} GB/s{}", l["load_direct_gbps"].get<double>(),
        l["direct_io_used"].get<bool>() ? "" : "  (filesystem refused O_DIRECT: buffered)"));
    return s;
}

}  // namespace jal::bench
