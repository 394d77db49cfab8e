// The host's memory floor (memory_bench.hpp).
#include "memory_bench.hpp"

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace jal::bench {

using json = nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kLine = 64;

// One load a cache line: the line's transfer is what costs, not the arithmetic on it.
uint64_t read_lines(const unsigned char* p, size_t bytes)
{
    uint64_t sum = 0;
    for (size_t o = 0; o < bytes; o += kLine) {
        uint64_t w;
        std::memcpy(&w, p + o, sizeof w);
        sum += w;
    }
    return sum;
}

// The source in pieces, each into the next slot of the ring (a slice's L1 being refilled).
void copy_pieces(const unsigned char* src, size_t bytes, unsigned char* ring, size_t ring_bytes,
                 size_t piece)
{
    size_t d = 0;
    for (size_t o = 0; o < bytes; o += piece) {
        const size_t n = std::min(piece, bytes - o);
        if (d + n > ring_bytes) d = 0;
        std::memcpy(ring + d, src + o, n);
        d += n;
    }
}

struct ThreadBuffers {
    std::unique_ptr<unsigned char[]> src, ring;
    uint64_t sum = 0;  // of the lines read: kept, so the reads are not optimised away
};

// Seconds of the slowest of `threads` threads doing `work` on their own buffers, started
// together; the best of passes lasting min_seconds (at least three).
template <typename Work>
double time_threads(unsigned threads, std::vector<ThreadBuffers>& buffers, double min_seconds,
                    Work work)
{
    double best = 1e300, spent = 0;
    for (int pass = 0; pass < 3 || spent < min_seconds; pass++) {
        std::barrier start(threads + 1);
        std::vector<double> seconds(threads);
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; t++)
            pool.emplace_back([&, t] {
                start.arrive_and_wait();
                const auto t0 = Clock::now();
                work(buffers[t]);
                seconds[t] = std::chrono::duration<double>(Clock::now() - t0).count();
            });
        start.arrive_and_wait();
        for (auto& th : pool) th.join();
        const double s = *std::max_element(seconds.begin(), seconds.end());
        best = std::min(best, s);
        spent += s;
    }
    return best;
}

}  // namespace

json run_memory_bench(const MemoryBenchOptions& o)
{
    if (o.bytes < kLine || o.piece == 0 || o.ring < o.piece)
        throw std::invalid_argument(
            "need --bytes of at least one cache line, --piece > 0 and --ring >= --piece");
    const unsigned threads =
        o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
    const size_t bytes = o.bytes / kLine * kLine;
    // Each thread's buffers, first touched by that thread (its pages where it runs).
    std::vector<ThreadBuffers> buffers(threads);
    {
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; t++)
            pool.emplace_back([&, t] {
                buffers[t].src.reset(new (std::nothrow) unsigned char[bytes]);
                buffers[t].ring.reset(new (std::nothrow) unsigned char[o.ring]);
                if (!buffers[t].src || !buffers[t].ring) return;
                std::memset(buffers[t].src.get(), int(t + 1), bytes);
                std::memset(buffers[t].ring.get(), 0, o.ring);
            });
        for (auto& th : pool) th.join();
    }
    for (const ThreadBuffers& b : buffers)
        if (!b.src || !b.ring)
            throw std::runtime_error(fmt::format(
                "cannot allocate {} + {} bytes for each of {} threads", bytes, o.ring, threads));
    json rows = json::array();
    std::vector<unsigned> counts{1};
    if (threads > 1) counts.push_back(threads);
    for (unsigned n : counts) {
        if (!o.quiet) std::cerr << fmt::format("jal-bench memory: {} thread(s)\n", n);
        const double read_s = time_threads(n, buffers, o.min_seconds, [&](ThreadBuffers& b) {
            b.sum += read_lines(b.src.get(), bytes);
        });
        const double copy_s = time_threads(n, buffers, o.min_seconds, [&](ThreadBuffers& b) {
            copy_pieces(b.src.get(), bytes, b.ring.get(), o.ring, o.piece);
        });
        rows.push_back({{"threads", n},
                        {"read_gb_s", double(n) * double(bytes) / read_s / 1e9},
                        {"copy_gb_s", double(n) * double(bytes) / copy_s / 1e9}});
    }
    uint64_t sum = 0;
    for (const ThreadBuffers& b : buffers) sum += b.sum;
    volatile uint64_t sink = sum;
    (void)sink;
    return {{"bytes", bytes}, {"ring", o.ring}, {"piece", o.piece}, {"rows", rows}};
}

std::string format_memory_table(const json& doc)
{
    std::string out = fmt::format(
        "each thread: reads {:.1f} MB (one load a cache line), or copies it in {:.0f} KiB pieces "
        "into a {:.0f} KiB ring\n",
        doc["bytes"].get<double>() / 1e6, doc["piece"].get<double>() / 1024,
        doc["ring"].get<double>() / 1024);
    out += fmt::format("{:>7} {:>10} {:>10}\n", "threads", "read GB/s", "copy GB/s");
    for (const json& r : doc["rows"])
        out += fmt::format("{:>7} {:>10.1f} {:>10.1f}\n", r["threads"].get<unsigned>(),
                           r["read_gb_s"].get<double>(), r["copy_gb_s"].get<double>());
    return out;
}

}  // namespace jal::bench
