#include "serve_command.hpp"

#include <fstream>
#include <iostream>

#include <jal/error.hpp>

#include "serve_bench.hpp"
#include "serve_report.hpp"

namespace jal::bench {

struct ServeCommand {
    CLI::App* app = nullptr;
    ServeBenchOptions o;
    bool json = false;
    std::string plot;
};

namespace {

void add_workload_options(CLI::App* c, ServeCommand& s)
{
    WorkloadSpec& w = s.o.workload;
    c->add_option("--input-len", w.input_len, "Prompt tokens of a request (default 1024)")
        ->check(CLI::Range(1u, 1u << 20));
    c->add_option("--output-len", w.output_len, "Output tokens of a request (default 128)")
        ->check(CLI::Range(1u, 1u << 20));
    c->add_option("--range-ratio", w.range_ratio,
                  "Lengths drawn uniformly in [len x ratio, len] (default 1: fixed)")
        ->check(CLI::Range(0.0, 1.0));
    c->add_option("--num-prompts", s.o.num_prompts,
                  "Requests at each concurrency (default 10 x concurrency)")
        ->check(CLI::Range(1u, 1u << 20));
    c->add_option("--concurrency", s.o.concurrency,
                  "Requests in flight, a comma-separated sweep (default 1,2,4,8)")
        ->delimiter(',')
        ->check(CLI::Range(1u, 4096u));
    c->add_option("--seed", w.seed, "Seed of the random lengths and token ids (default 0)");
    c->add_option_function<uint32_t>(
         "--vocab",
         [&s](uint32_t v) {
             s.o.workload.vocab = v;
             s.o.vocab_given = true;
         },
         "Token ids drawn from [0, N) (default 256 against a server, which every model "
         "takes; the shape's vocabulary with --timing-only)")
        ->check(CLI::Range(1u, 1u << 30));
}

}  // namespace

ServeCommand& add_serve_command(CLI::App& app)
{
    static ServeCommand s;
    CLI::App* c = app.add_subcommand(
        "serve", "InferenceX-style serving benchmark: TTFT, TPOT, ITL, E2E, throughput and "
                 "tok/s per kW at each concurrency, against a live jal-serve (--url) or a "
                 "timing-only model in-process (--timing-only)");
    s.app = c;
    auto* url = c->add_option("--url", s.o.url, "A live jal-serve: http://HOST:PORT");
    auto* timing = c->add_flag("--timing-only", s.o.timing_only,
                               "No server: a timing-only model of --shape on a private "
                               "jal-emu, in modelled chip time");
    url->excludes(timing);
    c->add_option("--shape", s.o.shape, "With --timing-only: gpt-oss-120b (default), gpt-oss-20b");
    c->add_option("--model", s.o.model, "The model id sent to the server (default: none)");
    add_workload_options(c, s);
    c->add_option("--measure-steps", s.o.measure_steps,
                  "With --timing-only: decode steps run at each batch size, the rest projected "
                  "from their mean (default 3; 0 runs every prefill and step)");
    c->add_option("--schedule", s.o.schedule,
                  "With --timing-only: mixed (default; jal-serve's engine: each step decodes "
                  "the running requests with a chunk of one prompt beside them) or serial "
                  "(each admitted prompt prefilled alone before the step)")
        ->check(CLI::IsMember({"mixed", "serial"}));
    c->add_option("--slices", s.o.slices, "With --timing-only: dispatch slices (default all)");
    c->add_option("--emu-dir", s.o.emu_dir,
                  "With --timing-only: jal-emu socket directory (default: $JAL_EMU_DIR, else "
                  "a private jal-emu)");
    c->add_option("-d,--device", s.o.device, "With --timing-only: device index");
    c->add_flag("--json", s.json, "Print one JSON document instead of the table");
    c->add_option("--plot", s.plot,
                  "Write a Pareto plot (mixed tok/s per kW rated against tok/s per user) as SVG");
    c->add_flag("-q,--quiet", s.o.quiet, "No progress lines on stderr");
    return s;
}

bool serve_command_parsed(const ServeCommand& c)
{
    return c.app && c.app->parsed();
}

int run_serve_command(const ServeCommand& c)
{
    if (c.o.url.empty() && !c.o.timing_only) {
        std::cerr << "jal-bench serve: give --url http://HOST:PORT or --timing-only\n";
        return 2;
    }
    try {
        const nlohmann::json doc = run_serve_bench(c.o);
        if (c.json)
            std::cout << doc.dump(2) << '\n';
        else
            std::cout << serve_table(doc);
        if (!c.plot.empty()) {
            std::ofstream out(c.plot);
            out << serve_plot(doc);
            if (!out) throw std::runtime_error("cannot write " + c.plot);
        }
        return 0;
    } catch (const jal::Error& e) {
        std::cerr << "jal-bench serve: " << e.what() << " (" << e.status_name() << ")\n";
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "jal-bench serve: " << e.what() << '\n';
        return 1;
    }
}

}  // namespace jal::bench
