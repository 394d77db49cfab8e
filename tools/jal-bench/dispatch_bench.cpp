// `jal-bench dispatch` (dispatch_bench.hpp). Wall clock around whole batches (or runs of
// single dispatches) divided by their dispatch count; the median of several repeats.
#include "dispatch_bench.hpp"
#include "usable_slices.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <fmt/format.h>

#include <jal/error.hpp>
#include <jal/jal.hpp>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>

namespace jal::bench {
namespace {

namespace jk = jal::kernels;
namespace jr = jal::runtime;
using clock_type = std::chrono::steady_clock;
using nlohmann::json;

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}

double seconds_since(clock_type::time_point t0)
{
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

jk::CodeObject empty_program()
{
    jk::Builder b("empty");
    b.end();
    return b.finish();
}

class DispatchBench {
public:
    explicit DispatchBench(const DispatchBenchOptions& o)
        : o_(o), dev_(o.device, o.emu_dir), ctx_(dev_), queue_(ctx_, 65536),
          launcher_(dev_, ctx_, queue_)
    {
        const uint64_t usable = launcher_.usable_slice_mask();
        usable_ = UsableSlices(usable);
        // Fetched by every slice of the widest dispatch: interleaved over all of them.
        program_ = std::make_unique<jk::Program>(dev_, ctx_, queue_, empty_program(),
                                                 jk::MemoryPlace{JAL_PLACE_INTERLEAVED, usable});
    }

    uint32_t usable_slices() const { return static_cast<uint32_t>(usable_.count()); }

    void note(const std::string& s) const
    {
        if (!o_.quiet) std::fprintf(stderr, "jal-bench dispatch: %s\n", s.c_str());
    }

    // µs per NOP packet: `nops` NOPs, the last with a completion signal, waited for.
    double nop_us()
    {
        std::vector<double> us;
        jr::Signal done(dev_, 1, true);
        for (uint32_t rep = 0; rep <= o_.repeats; rep++) {
            done.store(1);
            auto t0 = clock_type::now();
            for (uint32_t i = 0; i + 1 < o_.nops; i++) queue_.nop();
            queue_.nop(&done);
            auto r = done.wait_zero(std::chrono::seconds(120), JAL_WAIT_HYBRID);
            if (!r.satisfied || r.status != JAL_STATUS_OK)
                throw jal::Error(JAL_STATUS_TIMEOUT, "NOP baseline did not complete");
            if (rep > 0) us.push_back(seconds_since(t0) * 1e6 / o_.nops);  // rep 0: warm-up
        }
        return median(us);
    }

    // One row: `batch` empty dispatches on `slices` slices, batched or one at a time.
    json measure(uint32_t slices, bool batched, bool timing_only)
    {
        jk::DispatchOptions d;
        d.slice_mask = mask(slices);
        d.timing_only = timing_only;
        d.label = "empty";
        std::vector<double> us;
        jal_dispatch_report last{};
        for (uint32_t rep = 0; rep <= o_.repeats; rep++) {
            auto t0 = clock_type::now();
            if (batched) {
                for (uint32_t i = 0; i < o_.batch; i++) launcher_.add(*program_, jk::Args(), d);
                last = launcher_.run_batch().dispatches.back().report;
            } else {
                for (uint32_t i = 0; i < o_.batch; i++)
                    last = launcher_.run(*program_, jk::Args(), d);
            }
            if (rep > 0) us.push_back(seconds_since(t0) * 1e6 / o_.batch);  // rep 0: warm-up
        }
        return {{"slices", slices},
                {"mode", batched ? "batch" : "single"},
                {"timing_only", timing_only},
                {"dispatches", o_.batch},
                {"repeats", o_.repeats},
                {"us_per_dispatch", median(us)},
                {"us_min", *std::min_element(us.begin(), us.end())},
                {"us_max", *std::max_element(us.begin(), us.end())},
                {"modelled_us", last.modelled_ns / 1e3},
                {"instructions", last.instructions}};
    }

private:
    uint64_t mask(uint32_t n) const { return usable_.first(n); }

    const DispatchBenchOptions& o_;
    jr::Device dev_;
    jr::Context ctx_;
    jr::Queue queue_;
    jk::Launcher launcher_;
    UsableSlices usable_;
    std::unique_ptr<jk::Program> program_;
};

}  // namespace

json run_dispatch_bench(const DispatchBenchOptions& o)
{
    DispatchBench b(o);
    json doc;
    b.note("NOP baseline");
    const double nop = b.nop_us();
    doc["nop_us"] = nop;
    doc["nop_count"] = o.nops;
    doc["batch"] = o.batch;
    doc["repeats"] = o.repeats;
    json rows = json::array();
    for (uint32_t slices : {1u, b.usable_slices()})
        for (auto [batched, timing_only] : {std::pair{true, false}, {true, true}, {false, false}}) {
            b.note(fmt::format("{} slice(s), {}{}", slices, batched ? "batched" : "one at a time",
                               timing_only ? ", timing only" : ""));
            json row = b.measure(slices, batched, timing_only);
            row["vs_nop"] = row["us_per_dispatch"].get<double>() / nop;
            rows.push_back(row);
        }
    doc["rows"] = rows;
    // What each further slice adds to a batched dispatch (the emulator's per-slice work:
    // slice state and a worker-pool task each), from the 1-slice and widest batched rows.
    const uint32_t n = b.usable_slices();
    doc["batch_us_per_extra_slice"] = n > 1 ? (rows[3]["us_per_dispatch"].get<double>() -
                                               rows[0]["us_per_dispatch"].get<double>()) /
                                                  (n - 1)
                                            : 0.0;
    return doc;
}

std::string format_dispatch_table(const json& d)
{
    std::string s;
    auto line = [&](const std::string& l) { s += l + "\n"; };
    if (d.contains("emulator")) line("device: " + d["emulator"].get<std::string>());
    line(fmt::format("baseline: NOP packet {:.3f} us (median of {} x {} NOPs)",
                     d["nop_us"].get<double>(), d["repeats"].get<unsigned>(),
                     d["nop_count"].get<unsigned>()));
    line("");
    line("empty program  slices  mode    timing-only  us/dispatch  min..max us      vs NOP  "
         "modelled us");
    for (auto& r : d["rows"]) {
        const std::string range =
            fmt::format("{:.1f}..{:.1f}", r["us_min"].get<double>(), r["us_max"].get<double>());
        line(fmt::format(
            "               {:>6}  {:<6}  {:<11}  {:>11.1f}  {:<14}  {:>6.0f}x  {:>11.2f}",
            r["slices"].get<unsigned>(), r["mode"].get<std::string>(),
            r["timing_only"].get<bool>() ? "yes" : "no", r["us_per_dispatch"].get<double>(), range,
            r["vs_nop"].get<double>(), r["modelled_us"].get<double>()));
    }
    line(fmt::format("each further slice adds {:.2f} us to a batched dispatch",
                     d["batch_us_per_extra_slice"].get<double>()));
    line(fmt::format("({} dispatches a batch or run, median of {} repeats after one warm-up)",
                     d["batch"].get<unsigned>(), d["repeats"].get<unsigned>()));
    return s;
}

}  // namespace jal::bench
