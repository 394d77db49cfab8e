// A decode step's matrix arithmetic alone (decode_mma_bench.hpp).
#include "decode_mma_bench.hpp"

#include <algorithm>
#include <array>
#include <barrier>
#include <chrono>
#include <cstring>
#include <iostream>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <jal/isa/disasm.hpp>
#include <jal/isa/numerics.hpp>
#include <jal/isa/tile_math.hpp>
#include <jal/kernels/library/gemm.hpp>
#include <jal/model/gguf.hpp>
#include <jal/model/gpt_oss_config.hpp>

namespace jal::bench {

using json = nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

// One matrix of the step as the GGUF holds it: n rows of k elements.
struct Matrix {
    std::string name;
    jal_dtype dtype;
    bool kmajor;  // the runtime's layout for dense F32, BF16 and F16 weights
    uint32_t n, k;
    const unsigned char* rows;
    size_t row_bytes;
};

// A piece of a thread's share of one matrix: columns (outputs) contiguous in that thread's
// buffer, at most kPieceBytes of them: a tile, which the MMA holds to a slice's L1 (4 MiB),
// of the size the runtime's decode GEMVs multiply at once (0.4-1 MiB for the medium model).
struct Share {
    const Matrix* m;
    uint32_t n0, n;  // the matrix's columns [n0, n0 + n)
    size_t offset;
};
constexpr size_t kPieceBytes = size_t{1} << 20;

struct Worker {
    std::vector<unsigned char> weights;
    std::vector<Share> shares;
    std::vector<float> acc;
    std::array<double, 16> seconds{};  // in the GEMVs of each weight format (jal_dtype)
};

jal_dtype engine_dtype(model::TensorType t, const std::string& name)
{
    switch (t) {
    case model::TensorType::F32:
        return JAL_DT_F32;
    case model::TensorType::BF16:
        return JAL_DT_BF16;
    case model::TensorType::F16:
        return JAL_DT_F16;
    case model::TensorType::MXFP4:
        return JAL_DT_MXFP4;
    case model::TensorType::Q8_0:
        return JAL_DT_Q8_0;
    default:
        throw std::runtime_error(fmt::format("tensor '{}' is {}, which the matrix engine does not "
                                             "take (F32, BF16, F16, MXFP4, Q8_0)",
                                             name, model::tensor_type_name(t)));
    }
}

// `experts` matrices of a 3-D tensor (ne = {k, n, experts}), or the one of a 2-D tensor.
void add_matrices(std::vector<Matrix>& out, const model::GgufFile& f, const std::string& name,
                  uint32_t experts)
{
    const model::GgufTensor* t = f.find_tensor(name);
    if (!t) throw std::runtime_error(fmt::format("the model has no tensor '{}'", name));
    const jal_dtype dt = engine_dtype(t->type, name);
    const auto k = uint32_t(t->ne[0]), n = uint32_t(t->ne[1]);
    const size_t rb = numerics::row_bytes(dt, k);
    const bool dense = dt == JAL_DT_F32 || dt == JAL_DT_BF16 || dt == JAL_DT_F16;
    const auto* base = reinterpret_cast<const unsigned char*>(t->data.data());
    for (uint32_t e = 0; e < experts; e++) {
        const std::string label = t->n_dims == 3 ? fmt::format("{}[{}]", name, e) : name;
        out.push_back({label, dt, dense && t->n_dims == 2, n, k, base + size_t(e) * n * rb, rb});
    }
}

// Every matrix a batch-1 step multiplies: its token reads expert_used_count experts a layer
// (which ones does not change the bytes or the arithmetic: the first ones).
std::vector<Matrix> step_matrices(const model::GgufFile& f, const model::GptOssConfig& c)
{
    std::vector<Matrix> out;
    for (uint32_t il = 0; il < c.n_layer; il++) {
        for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate_inp"})
            add_matrices(out, f, fmt::format("blk.{}.{}.weight", il, w), 1);
        for (const char* w : {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"})
            add_matrices(out, f, fmt::format("blk.{}.{}.weight", il, w), c.n_expert_used);
    }
    add_matrices(out, f, f.find_tensor("output.weight") ? "output.weight" : "token_embd.weight", 1);
    return out;
}

// Columns [n0, n0 + n) of m where a slice would hold them: K rows of n (K-major, laid out by
// the runtime's own k_major_shard) or n rows.
void copy_share(const Matrix& m, uint32_t n0, uint32_t n, unsigned char* out)
{
    const unsigned char* rows = m.rows + size_t(n0) * m.row_bytes;
    if (m.kmajor)
        kernels::linear::k_major_shard(rows, n, m.k, m.dtype, out);
    else
        std::memcpy(out, rows, size_t(n) * m.row_bytes);
}

// Thread t of `threads`: its columns of every matrix, in pieces, in a buffer it touches first.
void build_worker(Worker& w, const std::vector<Matrix>& ms, unsigned t, unsigned threads)
{
    size_t bytes = 0;
    uint32_t widest = 0;
    for (const Matrix& m : ms) {
        const uint32_t first = uint32_t(uint64_t(m.n) * t / threads);
        const uint32_t end = uint32_t(uint64_t(m.n) * (t + 1) / threads);
        const auto piece = uint32_t(std::max<size_t>(1, kPieceBytes / m.row_bytes));
        for (uint32_t n0 = first; n0 < end; n0 += piece) {
            const uint32_t n = std::min(piece, end - n0);
            w.shares.push_back({&m, n0, n, bytes});
            bytes += size_t(n) * m.row_bytes;
            widest = std::max(widest, n);
        }
    }
    w.weights.resize(bytes);
    w.acc.assign(widest, 0.0f);
    for (const Share& s : w.shares) copy_share(*s.m, s.n0, s.n, w.weights.data() + s.offset);
}

// The activations every GEMV reads: F32 (the default numerics), and rounded to Q8_0 for the
// Q8_0 matrices, which the matrix engine multiplies only against Q8_0 (as the runtime does).
struct Activations {
    std::vector<float> f32;
    std::vector<unsigned char> q8;
};

Activations random_activations(uint32_t k)
{
    Activations a;
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> d(-1, 1);
    a.f32.resize(k);
    for (float& x : a.f32) x = d(rng);
    a.q8.resize(numerics::row_bytes(JAL_DT_Q8_0, k));
    numerics::quantize_row(JAL_DT_Q8_0, a.f32.data(), a.q8.data(), k);
    return a;
}

// One step of thread w: every share's GEMV, a the same row of K activations.
void run_step(Worker& w, const Activations& act)
{
    for (const Share& s : w.shares) {
        const Matrix& m = *s.m;
        const numerics::Tile acc{w.acc.data(), 1, s.n, s.n * 4, JAL_DT_F32};
        const jal_dtype adt = m.dtype == JAL_DT_Q8_0 ? JAL_DT_Q8_0 : JAL_DT_F32;
        const void* ad = adt == JAL_DT_Q8_0 ? static_cast<const void*>(act.q8.data())
                                            : static_cast<const void*>(act.f32.data());
        const numerics::ConstTile ta{ad, 1, m.k, uint32_t(numerics::row_bytes(adt, m.k)), adt};
        const unsigned char* b = w.weights.data() + s.offset;
        std::string error;
        const auto t0 = Clock::now();
        const jal_status st =
            m.kmajor
                ? numerics::mma_kmajor(
                      acc, ta, {b, m.k, s.n, uint32_t(s.n * (m.row_bytes / m.k)), m.dtype}, &error)
                : numerics::mma(acc, ta, {b, s.n, m.k, uint32_t(m.row_bytes), m.dtype}, &error);
        if (st != JAL_STATUS_OK)
            throw std::runtime_error(fmt::format("mma of {}: {}", m.name, error));
        w.seconds[m.dtype % w.seconds.size()] +=
            std::chrono::duration<double>(Clock::now() - t0).count();
    }
}

// Milliseconds of each step of the workers started together (the slowest's end), for at
// least min_seconds and five steps; the first (the caches' and the page tables' warm-up) is
// not counted. This thread runs worker 0, so that no thread waits on a CPU the workers need.
std::vector<double> time_steps(std::vector<Worker>& workers, const Activations& a,
                               double min_seconds)
{
    std::barrier sync(static_cast<std::ptrdiff_t>(workers.size()));
    bool stop = false;
    std::vector<std::string> errors(workers.size());
    auto step = [&](size_t t) {
        try {
            run_step(workers[t], a);
        } catch (const std::exception& e) {
            errors[t] = e.what();
        }
    };
    std::vector<std::thread> pool;
    for (size_t t = 1; t < workers.size(); t++)
        pool.emplace_back([&, t] {
            for (;;) {
                sync.arrive_and_wait();
                if (stop) return;
                step(t);
                sync.arrive_and_wait();
            }
        });
    std::vector<double> ms;
    double spent = 0;
    for (int i = 0; i < 100000 && (ms.size() < 5 || spent < min_seconds); i++) {
        const auto t0 = Clock::now();
        sync.arrive_and_wait();
        step(0);
        sync.arrive_and_wait();
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (std::any_of(errors.begin(), errors.end(), [](auto& e) { return !e.empty(); })) break;
        if (i > 0) ms.push_back(s * 1e3), spent += s;
        if (i == 0)
            for (Worker& w : workers) w.seconds.fill(0);  // idle until the next step starts
    }
    stop = true;
    sync.arrive_and_wait();
    for (auto& th : pool) th.join();
    for (const std::string& e : errors)
        if (!e.empty()) throw std::runtime_error(e);
    return ms;
}

json time_row(const std::vector<Matrix>& ms, unsigned threads, size_t bytes,
              const DecodeMmaBenchOptions& o)
{
    if (!o.quiet) std::cerr << fmt::format("jal-bench decode-mma: {} thread(s)\n", threads);
    std::vector<Worker> workers(threads);
    {
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; t++)
            pool.emplace_back([&, t] { build_worker(workers[t], ms, t, threads); });
        for (auto& th : pool) th.join();
    }
    uint32_t widest_k = 0;
    for (const Matrix& m : ms) widest_k = std::max(widest_k, m.k);
    std::vector<double> steps = time_steps(workers, random_activations(widest_k), o.min_seconds);
    json formats = json::array();
    for (jal_dtype dt : {JAL_DT_F32, JAL_DT_BF16, JAL_DT_F16, JAL_DT_Q8_0, JAL_DT_MXFP4}) {
        size_t format_bytes = 0;
        for (const Matrix& m : ms)
            if (m.dtype == dt) format_bytes += size_t(m.n) * m.row_bytes;
        if (format_bytes == 0) continue;
        double seconds = 0;
        for (const Worker& w : workers) seconds += w.seconds[dt % w.seconds.size()];
        formats.push_back({{"dtype", isa::dtype_name(dt)},
                           {"bytes", format_bytes},
                           {"ms", seconds * 1e3 / threads / double(steps.size())}});
    }
    std::sort(steps.begin(), steps.end());
    const double median = steps[steps.size() / 2];
    return {{"threads", threads},
            {"steps", steps.size()},
            {"step_ms", median},
            {"step_ms_best", steps.front()},
            {"gb_s", double(bytes) / (median * 1e-3) / 1e9},
            {"by_format", formats}};
}

}  // namespace

json run_decode_mma_bench(const DecodeMmaBenchOptions& o)
{
    if (o.model.empty()) throw std::invalid_argument("decode-mma needs a model (a GGUF file)");
    const model::GgufFile f = model::GgufFile::open(o.model);
    const model::GptOssConfig c = model::read_gpt_oss_config(f);
    const std::vector<Matrix> ms = step_matrices(f, c);
    size_t bytes = 0;
    for (const Matrix& m : ms) bytes += size_t(m.n) * m.row_bytes;
    const unsigned threads =
        o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
    json rows = json::array();
    rows.push_back(time_row(ms, 1, bytes, o));
    if (threads > 1) rows.push_back(time_row(ms, threads, bytes, o));
    return {{"model", o.model}, {"matrices", ms.size()}, {"bytes", bytes}, {"rows", rows}};
}

std::string format_decode_mma_table(const json& doc)
{
    std::string out = fmt::format(
        "a decode step's {} matrices ({:.1f} MB of weights) with the emulator's MMA arithmetic, "
        "each thread its share of every matrix, and nothing else\n",
        doc["matrices"].get<size_t>(), doc["bytes"].get<double>() / 1e6);
    out += fmt::format("{:>7} {:>14} {:>12} {:>8} {:>6}\n", "threads", "step ms median",
                       "step ms best", "GB/s", "steps");
    for (const json& r : doc["rows"])
        out +=
            fmt::format("{:>7} {:>14.3f} {:>12.3f} {:>8.1f} {:>6}\n", r["threads"].get<unsigned>(),
                        r["step_ms"].get<double>(), r["step_ms_best"].get<double>(),
                        r["gb_s"].get<double>(), r["steps"].get<size_t>());
    for (const json& r : doc["rows"]) {
        out += fmt::format("a thread's mean step on {} thread(s), by weight format:",
                           r["threads"].get<unsigned>());
        for (const json& f : r["by_format"])
            out += fmt::format(" {} {:.3f} ms ({:.1f} MB)", f["dtype"].get<std::string>(),
                               f["ms"].get<double>(), f["bytes"].get<double>() / 1e6);
        out += '\n';
    }
    return out;
}

}  // namespace jal::bench
