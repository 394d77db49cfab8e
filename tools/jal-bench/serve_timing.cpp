#include "serve_timing.hpp"

#include <chrono>
#include <cstdio>
#include <deque>
#include <stdexcept>

#include <jal/jal.hpp>
#include <jal/model/runtime.hpp>

#include "serve_chip_cost.hpp"
#include "tools/common/emu_process.hpp"

namespace jal::bench {

namespace {

using Clock = std::chrono::steady_clock;

jal::model::GptOssConfig shape_config(const std::string& name)
{
    if (name == "gpt-oss-120b") return jal::model::gpt_oss_120b_config();
    if (name == "gpt-oss-20b") return jal::model::gpt_oss_20b_config();
    throw std::invalid_argument("unknown shape '" + name + "' (gpt-oss-120b, gpt-oss-20b)");
}

// A request in the scheduler: times in modelled ns since the point began.
struct Live {
    size_t index = 0;
    int seq = -1;
    uint64_t arrival = 0, last = 0;
    uint32_t generated = 0;
};

}  // namespace

struct TimingTarget::Impl {
    TimingOptions options;
    uint32_t max_input, max_output;
    jal::tools::EmuLauncher emu;
    jal::runtime::Device device;
    std::unique_ptr<jal::model::Runtime> rt;
    std::unique_ptr<ChipCost> cost;

    Impl(const TimingOptions& o, uint32_t max_input, uint32_t max_output)
        : options(o), max_input(max_input), max_output(max_output),
          emu("jal-bench", o.emu_dir, false, {"--fw", "native"}), device(o.device, emu.socket_dir())
    {
        shape_config(o.shape);  // an unknown shape fails before any point
    }

    // A runtime with `concurrency` sequence slots, as jal-serve --max-sequences would have:
    // the slots' placement on the slices (each its group) depends on their number, so a
    // point runs on a runtime of its own, as jal-run's figures do.
    void open(uint32_t concurrency)
    {
        cost.reset();
        rt.reset();
        jal::model::RuntimeOptions ro;
        ro.timing_only = true;
        ro.slices = options.slices;
        ro.max_sequences = concurrency;
        ro.n_ctx = max_input + max_output + 1;
        // As jal-run: long prompts prefill in chunks of 2048 rows (the most the expert GEMM
        // takes), and a decode step of every sequence fits one graph run.
        ro.max_batch_tokens = std::max(std::min(max_input, 2048u), concurrency);
        rt = jal::model::Runtime::open_shape(shape_config(options.shape), device, ro);
        cost = std::make_unique<ChipCost>(*rt, options.measure_steps);
    }
};

TimingTarget::TimingTarget(const TimingOptions& options, uint32_t max_input, uint32_t max_output)
    : impl_(std::make_unique<Impl>(options, max_input, max_output))
{}

TimingTarget::~TimingTarget() = default;

uint32_t TimingTarget::vocab() const
{
    return shape_config(impl_->options.shape).n_vocab;
}

namespace {

// The scheduler of one point (jal-serve's Engine::admit and Engine::step in modelled time).
class Scheduler {
public:
    Scheduler(ChipCost& cost, uint32_t concurrency, const std::vector<BenchRequest>& requests,
              bool progress)
        : cost_(cost), concurrency_(concurrency), requests_(requests), progress_(progress),
          timings_(requests.size())
    {}

    PointRun run()
    {
        for (uint32_t i = 0; i < concurrency_ && next_ < requests_.size(); i++) send(0);
        while (done_ < requests_.size()) {
            admit();
            step();
            report(false);
        }
        report(true);
        PointRun out;
        out.requests = std::move(timings_);
        out.duration_s = now_ns_ / 1e9;
        out.chip.known = true;
        out.chip.modelled_s = now_ns_ / 1e9;
        out.chip.energy_j = energy_nj_ / 1e9 + jal::model::kStaticPowerW * out.chip.modelled_s;
        return out;
    }

private:
    // The client sends the next request (at modelled time `at`).
    void send(uint64_t at)
    {
        waiting_.push_back(Live{next_, -1, at, at, 0});
        timings_[next_].start_s = at / 1e9;
        timings_[next_].prompt_tokens = static_cast<uint32_t>(requests_[next_].prompt.size());
        next_++;
    }

    void admit()
    {
        while (!waiting_.empty() && running_.size() < concurrency_) {
            Live r = waiting_.front();
            waiting_.pop_front();
            StepCost c;
            r.seq = cost_.admit(requests_[r.index].prompt, c);
            advance(c);
            timings_[r.index].ttft_s = (now_ns_ - r.arrival) / 1e9;
            r.last = now_ns_;
            r.generated = 1;
            if (!finished(r)) running_.push_back(r);
        }
    }

    void step()
    {
        if (running_.empty()) return;
        std::vector<int> seqs;
        for (const Live& r : running_) seqs.push_back(r.seq);
        advance(cost_.decode(seqs));
        std::vector<Live> still;
        for (Live& r : running_) {
            timings_[r.index].itl_s.push_back((now_ns_ - r.last) / 1e9);
            r.last = now_ns_;
            r.generated++;
            if (!finished(r)) still.push_back(r);
        }
        running_ = std::move(still);
    }

    // Retires `r` if it has all its tokens (ignore_eos: only the length ends it).
    bool finished(const Live& r)
    {
        if (r.generated < requests_[r.index].output_len) return false;
        RequestTiming& t = timings_[r.index];
        t.output_tokens = r.generated;
        t.e2e_s = (now_ns_ - r.arrival) / 1e9;
        cost_.release(r.seq);
        done_++;
        if (next_ < requests_.size()) send(now_ns_);
        return true;
    }

    void advance(const StepCost& c)
    {
        now_ns_ += c.ns;
        energy_nj_ += c.nj;
    }

    void report(bool last)
    {
        if (!progress_ || (!last && Clock::now() - last_report_ < std::chrono::seconds(5))) return;
        last_report_ = Clock::now();
        std::fprintf(stderr,
                     "jal-bench serve: concurrency %u: %zu/%zu requests done, %.3f s "
                     "modelled\n",
                     concurrency_, done_, requests_.size(), now_ns_ / 1e9);
    }

    ChipCost& cost_;
    const uint32_t concurrency_;
    const std::vector<BenchRequest>& requests_;
    const bool progress_;
    std::vector<RequestTiming> timings_;
    std::deque<Live> waiting_;
    std::vector<Live> running_;
    size_t next_ = 0, done_ = 0;
    uint64_t now_ns_ = 0, energy_nj_ = 0;
    Clock::time_point last_report_ = Clock::now();
};

}  // namespace

PointRun TimingTarget::run_point(uint32_t concurrency, const std::vector<BenchRequest>& requests)
{
    // A fresh runtime and cost model a point: what was run and what projected is per point.
    impl_->open(concurrency);
    Scheduler s(*impl_->cost, concurrency, requests, impl_->options.progress);
    return s.run();
}

nlohmann::json TimingTarget::last_counts() const
{
    if (!impl_->cost) return nullptr;
    const CostCounts& c = impl_->cost->counts();
    return {{"prefills_run", c.prefills_run},
            {"prefills_reused", c.prefills_reused},
            {"prefills_interpolated", c.prefills_interpolated},
            {"decode_steps_run", c.steps_run},
            {"decode_steps_projected", c.steps_projected}};
}

nlohmann::json TimingTarget::describe() const
{
    const auto& o = impl_->options;
    return {{"kind", "timing-only"},
            {"shape", o.shape},
            {"slices", o.slices ? nlohmann::json(o.slices) : nlohmann::json("all")},
            {"time_base", "modelled"},
            {"measure_steps", o.measure_steps},
            {"emulator", impl_->emu.description()}};
}

}  // namespace jal::bench
