// jal-serve: an OpenAI-compatible HTTP server for a GPT-OSS GGUF model on a Jalapeño chip
// (jal-emu): completions and chat completions, streamed or whole, with continuous batching
// of concurrent requests, and Prometheus metrics. docs/serving.md ("Server") is the manual.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <jal/jal.hpp>
#include <jal/model/runtime.hpp>

#include "default_model.hpp"
#include "engine_pool.hpp"
#include "http_server.hpp"
#include "text_codec.hpp"
#include "tools/common/emu_process.hpp"
#include "tools/common/version.hpp"

namespace {

using namespace jal::serve;

struct Options {
    std::string model;
    std::string model_name;
    std::string host = "127.0.0.1";
    uint16_t port = 8000;
    uint32_t max_concurrency = 64;
    uint32_t max_sequences = 8;
    uint32_t n_ctx = 0;
    std::string numerics = "native";
    std::string emu_dir;
    std::vector<unsigned> devices{0};
};

std::unique_ptr<jal::model::Runtime> open_model(const Options& o, const std::string& path,
                                                jal::runtime::Device& device)
{
    jal::model::RuntimeOptions ro;
    if (!jal::model::parse_numerics(o.numerics, ro.numerics))
        throw CLI::ValidationError("--numerics", "expected native or ggml");
    ro.max_sequences = o.max_sequences;
    ro.n_ctx = o.n_ctx;
    return jal::model::Runtime::open(path, device, ro);
}

// One engine a chip, each with the whole model: `devices` keeps the devices open.
EnginePool open_engines(const Options& o, const std::string& path, const std::string& emu_dir,
                        Metrics& metrics,
                        std::vector<std::unique_ptr<jal::runtime::Device>>& devices)
{
    std::vector<unsigned> seen;
    std::vector<std::unique_ptr<Engine>> engines;
    for (unsigned index : o.devices) {
        if (std::find(seen.begin(), seen.end(), index) != seen.end())
            throw CLI::ValidationError("--devices",
                                       "chip " + std::to_string(index) + " is given twice");
        seen.push_back(index);
        devices.push_back(std::make_unique<jal::runtime::Device>(index, emu_dir));
        const auto chip = static_cast<unsigned>(engines.size());
        engines.push_back(std::make_unique<Engine>(open_model(o, path, *devices.back()),
                                                   EngineLimits{o.max_sequences, o.max_concurrency},
                                                   metrics, chip));
    }
    return EnginePool(std::move(engines), o.max_concurrency);
}

// SIGINT or SIGTERM: stop accepting and let the requests in flight finish; a second one
// fails them at once. The io_context runs out of work (and run() returns) when the last
// connection has closed.
void handle_signals(boost::asio::signal_set& signals, HttpServer& server, EnginePool& engine,
                    int received = 0)
{
    signals.async_wait([&signals, &server, &engine, received](const auto& ec, int sig) {
        if (ec) return;  // cancelled: everything has stopped
        // Wait for the next one first: stop_accepting() may cancel the wait at once.
        handle_signals(signals, server, engine, received + 1);
        if (received == 0) {
            std::fprintf(stderr,
                         "jal-serve: %s: shutting down once %zu open connection(s) are done "
                         "(again to fail the requests in flight)\n",
                         ::strsignal(sig), server.connections());
            engine.drain();
            server.stop_accepting([&signals] { signals.cancel(); });
        } else {
            std::fprintf(stderr, "jal-serve: %s again: failing the requests in flight\n",
                         ::strsignal(sig));
            engine.abort("the server is shutting down");
        }
    });
}

int run(const Options& o)
{
    // Declared first, so that they go last: until the signal set is destroyed, a signal
    // during the teardown is caught (and ignored), not fatal. It is created once the model
    // is loaded: a signal during the upload ends the program at once.
    boost::asio::io_context io;
    std::optional<boost::asio::signal_set> signals;
    const std::string path = o.model.empty() ? jal::run::default_model_path(false) : o.model;
    const unsigned chips = *std::max_element(o.devices.begin(), o.devices.end()) + 1;
    jal::tools::EmuLauncher emu("jal-serve", o.emu_dir, true,
                                {"--fw", "native", "--chips", std::to_string(chips)});
    Metrics metrics;
    std::vector<std::unique_ptr<jal::runtime::Device>> devices;  // outlive their engines
    EnginePool engine = open_engines(o, path, emu.socket_dir(), metrics, devices);
    std::unique_ptr<TextCodec> codec = open_text_codec(path);
    const ModelInfo model{o.model_name.empty() ? std::filesystem::path(path).stem().string()
                                               : o.model_name,
                          engine.config().n_vocab, engine.n_ctx()};
    const auto& cfg = engine.config();
    ServeContext ctx{engine, metrics, *codec, model, o.max_concurrency};
    HttpServer server(io, ctx);
    const uint16_t port = server.listen(o.host, o.port);
    signals.emplace(io, SIGINT, SIGTERM);
    handle_signals(*signals, server, engine);
    server.start();
    std::fprintf(stderr,
                 "jal-serve: model '%s' (%s: %u layers, vocab %u, %s), context %u, %u sequences "
                 "decoded together on each of %zu chip%s, at most %u requests; %s\n",
                 model.id.c_str(), path.c_str(), cfg.n_layer, cfg.n_vocab,
                 codec->has_vocabulary() ? "text" : "no vocabulary: token ids only", model.n_ctx,
                 o.max_sequences, engine.size(), engine.size() > 1 ? "s" : "", o.max_concurrency,
                 emu.description().c_str());
    std::fprintf(stderr, "jal-serve: listening on http://%s:%u\n", o.host.c_str(), port);
    io.run();
    engine.join();
    std::fprintf(stderr, "jal-serve: stopped\n");
    return 0;
}

void add_options(CLI::App& app, Options& o)
{
    app.add_option("model", o.model,
                   "GPT-OSS or DeepSeek-V3 (deepseek2) GGUF file (default: jal-run's small "
                   "synthetic model, written once and cached)");
    app.add_option("--host", o.host, "Address to listen on (default 127.0.0.1; 0.0.0.0: all)");
    app.add_option("--port", o.port, "TCP port (default 8000; 0: any free port, printed)");
    app.add_option("--model-name", o.model_name,
                   "The id clients pass as \"model\" (default: the file name without .gguf)");
    app.add_option("--max-concurrency", o.max_concurrency,
                   "Requests accepted at once, running or queued; more get HTTP 429 (default 64)")
        ->check(CLI::Range(1u, 1u << 20));
    app.add_option("--max-sequences", o.max_sequences,
                   "Sequences decoded together (KV cache slots); more requests wait in the "
                   "queue (default 8)")
        ->check(CLI::Range(1, 1024));
    app.add_option("--ctx", o.n_ctx,
                   "Positions of each sequence's KV cache: prompt plus reply (default: the "
                   "model's context, at most 4096)");
    app.add_option("--numerics", o.numerics,
                   "native (default) or ggml (llama.cpp's CPU roundings)");
    app.add_option(
        "--emu-dir", o.emu_dir,
        "jal-emu socket directory (default: $JAL_EMU_DIR, a running chip, or start one)");
    app.add_option("-d,--devices", o.devices,
                   "Chips to serve on, comma-separated (default 0): each holds the whole model "
                   "and takes the next request when it has the least work")
        ->delimiter(',')
        ->check(CLI::Range(0u, 1023u));
}

}  // namespace

int main(int argc, char** argv)
{
    CLI::App app{
        "jal-serve: an OpenAI-compatible HTTP server (/v1/completions, /v1/chat/completions, "
        "/v1/models, /health, /metrics) for a GPT-OSS or DeepSeek-V3 GGUF model on a Jalapeño "
        "chip (jal-emu). "
        "Concurrent requests are decoded together (continuous batching). A model without a "
        "vocabulary takes prompts as arrays of token ids and answers with \"token_ids\". "
        "SIGINT/SIGTERM: stop accepting, finish the requests in flight, exit 0. See "
        "docs/serving.md."};
    app.set_version_flag("--version", jal::tools::version_text("jal-serve"));
    Options o;
    add_options(app, o);
    CLI11_PARSE(app, argc, argv);
    try {
        return run(o);
    } catch (const CLI::Error& e) {
        return app.exit(e);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "jal-serve: %s\n", e.what());
        return 1;
    }
}
