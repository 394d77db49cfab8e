#include "serve_timing.hpp"

#include <stdexcept>

#include <jal/jal.hpp>
#include <jal/model/runtime.hpp>

#include "serve_chip_cost.hpp"
#include "serve_scheduler.hpp"
#include "tools/common/emu_process.hpp"

namespace jal::bench {

namespace {

jal::model::GptOssConfig shape_config(const std::string& name)
{
    if (name == "gpt-oss-120b") return jal::model::gpt_oss_120b_config();
    if (name == "gpt-oss-20b") return jal::model::gpt_oss_20b_config();
    throw std::invalid_argument("unknown shape '" + name + "' (gpt-oss-120b, gpt-oss-20b)");
}

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
        // takes), and a decode step of every sequence fits one graph run; mixed, a pass holds
        // the other sequences' decode rows and as much of a prompt as fits beside them.
        ro.max_batch_tokens = std::max(std::min(max_input, 2048u), concurrency);
        if (options.mixed)
            ro.max_batch_tokens =
                std::max(std::min(max_input + concurrency, 2048u), concurrency + 1);
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

PointRun TimingTarget::run_point(uint32_t concurrency, const std::vector<BenchRequest>& requests)
{
    // A fresh runtime and cost model a point: what was run and what projected is per point.
    impl_->open(concurrency);
    return run_scheduler(*impl_->cost, concurrency, requests, impl_->options.progress,
                         impl_->options.mixed);
}

nlohmann::json TimingTarget::last_counts() const
{
    if (!impl_->cost) return nullptr;
    const CostCounts& c = impl_->cost->counts();
    return {{"prefills_run", c.prefills_run},
            {"prefills_reused", c.prefills_reused},
            {"prefills_interpolated", c.prefills_interpolated},
            {"decode_steps_run", c.steps_run},
            {"decode_steps_projected", c.steps_projected},
            {"mixed_steps_run", c.mixed_run},
            {"mixed_steps_projected", c.mixed_projected}};
}

nlohmann::json TimingTarget::describe() const
{
    const auto& o = impl_->options;
    return {{"kind", "timing-only"},
            {"shape", o.shape},
            {"slices", o.slices ? nlohmann::json(o.slices) : nlohmann::json("all")},
            {"time_base", "modelled"},
            {"measure_steps", o.measure_steps},
            {"schedule", o.mixed ? "mixed" : "serial"},
            {"emulator", impl_->emu.description()}};
}

}  // namespace jal::bench
