// `jal-bench kernels` (kernel_bench.hpp): each case allocates its tensors where the kernel's
// split wants them (weights shard by shard in each slice's local HBM, shared inputs
// replicated), fills them with seeded data, runs the kernel once to warm up and once timed
// (wall clock around Launcher::run), and reads the dispatch report.
#include "kernel_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include <jal/chip_function.hpp>
#include <jal/error.hpp>
#include <jal/jal.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/argmax.hpp>
#include <jal/kernels/library/collective.hpp>
#include <jal/kernels/library/embedding.hpp>
#include <jal/kernels/library/expert_gemm.hpp>
#include <jal/kernels/library/gemm.hpp>
#include <jal/kernels/library/quantize.hpp>

#include "sgemm_baseline.hpp"
#include "usable_slices.hpp"

namespace jal::bench {
namespace {

namespace jk = jal::kernels;
namespace jl = jal::kernels::linear;
namespace jr = jal::runtime;
using nlohmann::json;

// The modelled chip (ARCHITECTURE.md §12, emu/tile_exec/timing_rates.hpp): per slice.
constexpr double kHbmBytesPerNs = 240.0;
constexpr double kNetBytesPerNs = 64.0;
double peak_flops_per_ns(jal_dtype mma)
{
    switch (mma) {
    case JAL_DT_MXFP4:
        return 13.4e15 / 64 * 1e-9;
    case JAL_DT_MXFP8_E4M3:
    case JAL_DT_Q8_0:
        return 3.4e15 / 64 * 1e-9;
    case JAL_DT_BF16:
        return 3.4e15 / 64 / 2 * 1e-9;
    default:
        return 3.4e15 / 64 / 8 * 1e-9;
    }
}
// The matrix engine runs at the slower input format's rate.
jal_dtype mma_format(jal_dtype weight, jl::Numerics n)
{
    jal_dtype a = jl::activation_dtype(weight, n);
    auto rank = [](jal_dtype d) {
        return d == JAL_DT_MXFP4                            ? 0
               : d == JAL_DT_MXFP8_E4M3 || d == JAL_DT_Q8_0 ? 1
               : d == JAL_DT_BF16                           ? 2
                                                            : 3;
    };
    return rank(a) > rank(weight) ? a : weight;
}
const char* dtype_name(jal_dtype d)
{
    switch (d) {
    case JAL_DT_MXFP4:
        return "MXFP4";
    case JAL_DT_MXFP8_E4M3:
        return "MXFP8";
    case JAL_DT_Q8_0:
        return "Q8_0";
    case JAL_DT_BF16:
        return "BF16";
    case JAL_DT_F32:
        return "F32";
    default:
        return "?";
    }
}

// Seeded bytes that decode to finite values of `dt` (the content does not change the
// modelled time; the tests check correctness).
std::vector<uint8_t> random_tensor(jal_dtype dt, uint64_t rows, uint32_t cols, uint64_t seed)
{
    const uint64_t row = jl::packed_row_bytes(dt, cols);
    std::vector<uint8_t> v(rows * row);
    std::mt19937_64 rng(seed);
    for (size_t i = 0; i + 8 <= v.size(); i += 8) {
        uint64_t r = rng();
        std::memcpy(&v[i], &r, 8);
    }
    switch (dt) {
    case JAL_DT_MXFP4:
        for (size_t i = 0; i < v.size(); i += 17)
            v[i] = static_cast<uint8_t>(120 + v[i] % 4);  // scales near 2^-6
        break;
    case JAL_DT_MXFP8_E4M3:
        for (size_t i = 0; i < v.size(); i++)
            if (i % 33 == 0)
                v[i] = static_cast<uint8_t>(118 + v[i] % 4);
            else if ((v[i] & 0x7f) == 0x7f)
                v[i] ^= 1;  // not NaN
        break;
    case JAL_DT_Q8_0:
        for (size_t i = 0; i < v.size(); i += 34) v[i] = 0x1f, v[i + 1] = 0x21;  // F16 0.0101
        break;
    case JAL_DT_BF16:
        for (size_t i = 0; i + 1 < v.size(); i += 2)
            v[i + 1] = static_cast<uint8_t>((v[i + 1] & 0x80) | (0x3c + v[i + 1] % 4));  // |x| < 2
        break;
    case JAL_DT_F32:
        for (size_t i = 0; i + 3 < v.size(); i += 4) {
            float f = static_cast<float>(static_cast<int32_t>(v[i] | v[i + 1] << 8)) / 32768.0f;
            std::memcpy(&v[i], &f, 4);
        }
        break;
    default:
        break;
    }
    return v;
}

// Roofline of `bytes` moved and `flops` computed on `slices` slices in `modelled_ns`: the
// fraction of local HBM bandwidth and of the matrix engine's peak for `format` achieved;
// `bound` names the larger of the two ideal times. A GEMV is judged by hbm, a GEMM by mma.
struct Roofline {
    double hbm = 0, mma = 0;
    const char* bound = "HBM";
};
Roofline roofline(uint64_t bytes, uint64_t flops, jal_dtype format, uint32_t slices,
                  uint64_t modelled_ns)
{
    double t_mem = bytes / (kHbmBytesPerNs * slices),
           t_mma = flops / (peak_flops_per_ns(format) * slices);
    Roofline r;
    r.hbm = t_mem / static_cast<double>(modelled_ns);
    r.mma = t_mma / static_cast<double>(modelled_ns);
    r.bound = t_mem >= t_mma ? "HBM" : dtype_name(format);
    return r;
}

struct Measured {
    jal_dispatch_report report{};
    double wall_s = 0;
};

class KernelBench {
public:
    explicit KernelBench(const KernelBenchOptions& o)
        : opt_(o), dev_(o.device, o.emu_dir), ctx_(dev_), queue_(ctx_, 256),
          launcher_(dev_, ctx_, queue_)
    {
        usable_ = UsableSlices(launcher_.usable_slice_mask());
    }

    json run_all();

private:
    void progress(const std::string& s)
    {
        if (!opt_.quiet) std::cerr << "jal-bench kernels: " << s << std::endl;
    }
    bool wanted(const std::string& kernel) const
    {
        return opt_.filter.empty() || kernel.find(opt_.filter) != std::string::npos;
    }
    uint64_t mask(uint32_t n) const { return usable_.first(n); }
    uint64_t alloc(uint64_t bytes, jal_placement placement, uint64_t slice_mask)
    {
        mem_.push_back(std::make_unique<jr::Memory>(ctx_, std::max<uint64_t>(bytes, 64), placement,
                                                    slice_mask));
        return mem_.back()->va();
    }
    void write(uint64_t va, const void* data, uint64_t bytes)
    {
        const uint64_t chunk = 64ull << 20;
        jr::HostBuffer host(dev_, std::min(bytes, chunk));
        for (uint64_t off = 0; off < bytes; off += chunk) {
            uint64_t n = std::min(chunk, bytes - off);
            std::memcpy(host.data(), static_cast<const uint8_t*>(data) + off, n);
            jr::Signal done(dev_, 1);
            queue_.copy_to_device(va + off, host, 0, n, &done);
            auto r = done.wait_zero(std::chrono::seconds(120));
            if (!r.satisfied || r.status != JAL_STATUS_OK)
                throw jal::Error(JAL_STATUS_IO_ERROR, "upload failed");
        }
    }
    uint64_t upload(const std::vector<uint8_t>& v, jal_placement placement, uint64_t slice_mask)
    {
        uint64_t va = alloc(v.size(), placement, slice_mask);
        write(va, v.data(), v.size());
        return va;
    }
    template <typename T>
    uint64_t upload_vec(const std::vector<T>& v, jal_placement placement, uint64_t slice_mask)
    {
        std::vector<uint8_t> b(v.size() * sizeof(T));
        std::memcpy(b.data(), v.data(), b.size());
        return upload(b, placement, slice_mask);
    }
    Measured measure(const jk::CodeObject& code, const std::vector<uint64_t>& words,
                     uint64_t slice_mask)
    {
        jk::Program program(dev_, ctx_, queue_, code);
        jk::Args args;
        for (uint64_t w : words) args.u64(w);
        jk::DispatchOptions o;
        o.slice_mask = slice_mask;
        Measured m;
        if (!opt_.quick)
            launcher_.run(program, args, o);  // warm-up: the emulator's pages and caches
        auto t0 = std::chrono::steady_clock::now();
        m.report = launcher_.run(program, args, o);
        m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return m;
    }
    // One result row. flops: the kernel's nominal work (2·M·N·K for the GEMMs), or 0 to use
    // the report's; sgemm: the M, N, K of the F32 baseline, or none.
    void row(const std::string& kernel, const std::string& shape, uint32_t slices,
             const Measured& m, double roofline, const char* bound, uint64_t flops,
             std::array<uint32_t, 3> sgemm = {0, 0, 0}, const Roofline* both = nullptr)
    {
        json r;
        if (both) {
            r["hbm_fraction"] = both->hbm;
            r["mma_fraction"] = both->mma;
        }
        r["kernel"] = kernel;
        r["shape"] = shape;
        r["slices"] = slices;
        r["modelled_us"] = m.report.modelled_ns / 1e3;
        r["roofline_fraction"] = roofline;
        r["bound"] = bound;
        r["flops"] = flops ? flops : m.report.flops;
        r["hbm_bytes"] = m.report.hbm_bytes;
        r["energy_uj"] = m.report.energy_nj / 1e3;
        r["wall_ms"] = m.wall_s * 1e3;
        double gflops = static_cast<double>(flops ? flops : m.report.flops) / m.wall_s / 1e9;
        r["host_gflops"] = gflops;
        if (sgemm[0]) {
            auto key = std::make_tuple(sgemm[0], sgemm[1], sgemm[2]);
            if (!sgemm_.count(key)) {
                progress(fmt::format("OpenBLAS sgemm {}x{}x{}", sgemm[0], sgemm[1], sgemm[2]));
                sgemm_[key] = sgemm_gflops(sgemm[0], sgemm[1], sgemm[2]);
            }
            r["sgemm_gflops"] = sgemm_[key];
            r["vs_sgemm"] = gflops / sgemm_[key];
        } else {
            r["sgemm_gflops"] = nullptr;
            r["vs_sgemm"] = nullptr;
        }
        progress(fmt::format("{} {}: {:.2f} us modelled, {:.0f}% of roofline, {:.1f} ms wall",
                             kernel, shape, m.report.modelled_ns / 1e3, roofline * 100,
                             m.wall_s * 1e3));
        rows_.push_back(std::move(r));
    }

    void gemv(jal_dtype weight, jl::Numerics numerics, uint32_t m, uint32_t n, uint32_t k,
              uint32_t slices);
    void gemm_prefill(uint32_t m, uint32_t n, uint32_t k, uint32_t slices, jl::Numerics numerics);
    void expert(uint32_t tokens, bool down, uint32_t experts, uint32_t width, uint32_t hidden,
                uint32_t slices, jl::Numerics numerics);
    void embedding(uint32_t tokens, uint32_t vocab, uint32_t dim, uint32_t slices);
    void argmax(uint32_t rows, uint32_t vocab, uint32_t slices);
    void all_reduce(uint32_t length, uint32_t slices);
    void quantize(uint32_t m, uint32_t k, uint32_t slices);

    // Each slice's rows of a weight in that slice's own HBM; returns the shard table's address.
    uint64_t sharded_weight(jal_dtype dt, uint32_t rows_total, uint32_t cols, uint32_t slices,
                            uint32_t unit_rows, uint32_t units, uint64_t seed)
    {
        std::vector<uint64_t> table;
        for (uint32_t s = 0; s < slices; s++) {
            jl::Range r = jl::slice_range(units, slices, s);
            uint64_t rows = uint64_t{r.size()} * unit_rows;
            (void)rows_total;
            uint64_t va = upload(random_tensor(dt, std::max<uint64_t>(rows, 1), cols, seed + s),
                                 JAL_PLACE_SLICE, 1ull << usable_[s]);
            table.push_back(va);
        }
        return upload_vec(table, JAL_PLACE_REPLICATED,
                          mask(slices));  // each slice reads its entry locally
    }

    KernelBenchOptions opt_;
    jr::Device dev_;
    jr::Context ctx_;
    jr::Queue queue_;
    jk::Launcher launcher_;
    UsableSlices usable_;
    std::vector<std::unique_ptr<jr::Memory>> mem_;
    std::vector<json> rows_;
    std::map<std::tuple<uint32_t, uint32_t, uint32_t>, double> sgemm_;
};

jk::TensorRef tensor(uint64_t va, uint32_t rows, uint32_t cols, jal_dtype dt)
{
    return {.va = va, .rows = rows, .cols = cols, .row_stride = 0, .dtype = dt};
}

void KernelBench::gemv(jal_dtype weight, jl::Numerics numerics, uint32_t m, uint32_t n, uint32_t k,
                       uint32_t slices)
{
    const std::string kernel =
        fmt::format("gemv_{}_{}", dtype_name(weight), jl::numerics_name(numerics));
    if (!wanted(kernel)) return;
    progress(fmt::format("{} M={} N={} K={} on {} slices", kernel, m, n, k, slices));
    mem_.clear();
    jl::GemmConfig c{.m = m, .n = n, .k = k, .weight = weight, .numerics = numerics, .bias = true};
    const uint64_t sm = mask(slices);
    uint64_t table = sharded_weight(weight, n, k, slices, 1, n, 100);
    uint64_t x = upload(random_tensor(JAL_DT_F32, m, k, 1), JAL_PLACE_REPLICATED, sm);
    uint64_t bias = upload(random_tensor(JAL_DT_F32, 1, n, 2), JAL_PLACE_REPLICATED, sm);
    uint64_t y = alloc(uint64_t{m} * n * 4, JAL_PLACE_INTERLEAVED, sm);
    auto words = jl::gemm_args(c, tensor(x, m, k, JAL_DT_F32), table, tensor(1, n, k, weight),
                               tensor(bias, 1, n, JAL_DT_F32), tensor(y, m, n, JAL_DT_F32));
    Measured r = measure(jl::build_gemm(c), words, sm);
    Roofline roof = roofline(r.report.hbm_bytes, 2ull * m * n * k, mma_format(weight, numerics),
                             slices, r.report.modelled_ns);
    row(kernel, fmt::format("M={} N={} K={}", m, n, k), slices, r, roof.hbm, roof.bound,
        jl::gemm_flops(c), {m, n, k}, &roof);
}

void KernelBench::gemm_prefill(uint32_t m, uint32_t n, uint32_t k, uint32_t slices,
                               jl::Numerics numerics)
{
    const jal_dtype act = jl::activation_dtype(JAL_DT_MXFP4, numerics);
    const std::string kernel = fmt::format("gemm_MXFP4x{}", dtype_name(act));
    if (!wanted(kernel)) return;
    progress(fmt::format("{} M={} N={} K={} on {} slices (x quantized by quantize first)", kernel,
                         m, n, k, slices));
    mem_.clear();
    const uint64_t sm = mask(slices);
    // Activations: F32, quantized once (on up to 8 slices) into a buffer replicated on the
    // GEMM's slices, so each slice reads them locally.
    uint32_t qs = std::min<uint32_t>(8, static_cast<uint32_t>(usable_.count()));
    jl::QuantizeConfig qc{.m = m, .k = k, .out = act, .mode = jl::activation_cvt_mode(numerics)};
    uint64_t xf = upload(random_tensor(JAL_DT_F32, m, k, 3), JAL_PLACE_INTERLEAVED, mask(qs));
    uint64_t xq = alloc(uint64_t{m} * jl::packed_row_bytes(act, k), JAL_PLACE_REPLICATED, sm);
    measure(jl::build_quantize(qc),
            jl::quantize_args(qc, tensor(xf, m, k, JAL_DT_F32), tensor(xq, m, k, act)), mask(qs));
    jl::GemmConfig c{.m = m,
                     .n = n,
                     .k = k,
                     .weight = JAL_DT_MXFP4,
                     .numerics = numerics,
                     .x_dtype = act,
                     .bias = true};
    uint64_t table = sharded_weight(JAL_DT_MXFP4, n, k, slices, 1, n, 200);
    uint64_t bias = upload(random_tensor(JAL_DT_F32, 1, n, 4), JAL_PLACE_REPLICATED, sm);
    uint64_t y = alloc(uint64_t{m} * n * 4, JAL_PLACE_INTERLEAVED, sm);
    auto words = jl::gemm_args(c, tensor(xq, m, k, act), table, tensor(1, n, k, JAL_DT_MXFP4),
                               tensor(bias, 1, n, JAL_DT_F32), tensor(y, m, n, JAL_DT_F32));
    Measured r = measure(jl::build_gemm(c), words, sm);
    Roofline roof = roofline(r.report.hbm_bytes, 2ull * m * n * k,
                             mma_format(JAL_DT_MXFP4, numerics), slices, r.report.modelled_ns);
    row(kernel, fmt::format("M={} N={} K={}", m, n, k), slices, r, roof.mma, roof.bound,
        jl::gemm_flops(c), {m, n, k}, &roof);
}

void KernelBench::expert(uint32_t tokens, bool down, uint32_t experts, uint32_t width,
                         uint32_t hidden, uint32_t slices, jl::Numerics numerics)
{
    const std::string kernel =
        fmt::format("expert_{}_{}", down ? "down" : "up", jl::numerics_name(numerics));
    if (!wanted(kernel)) return;
    const uint32_t k = 4, n = down ? hidden : 2 * width, kdim = down ? width : hidden;
    progress(fmt::format("{} tokens={} k={} E={} N={} K={} on {} slices", kernel, tokens, k,
                         experts, n, kdim, slices));
    mem_.clear();
    const uint64_t sm = mask(slices);
    jl::ExpertGemmConfig c{.tokens = tokens,
                           .k = k,
                           .experts = experts,
                           .n = n,
                           .kdim = kdim,
                           .weight = JAL_DT_MXFP4,
                           .numerics = numerics,
                           .bias = true,
                           .input_per_pair = down};
    // k distinct experts per token, seeded.
    std::mt19937_64 rng(5);
    std::vector<int32_t> ids;
    std::set<uint32_t> owners;
    for (uint32_t t = 0; t < tokens; t++) {
        std::vector<int32_t> all(experts);
        for (uint32_t e = 0; e < experts; e++) all[e] = static_cast<int32_t>(e);
        std::shuffle(all.begin(), all.end(), rng);
        for (uint32_t j = 0; j < k; j++) {
            ids.push_back(all[j]);
            for (uint32_t s = 0; s < slices; s++) {
                jl::Range r = jl::slice_range(experts, slices, s);
                if (static_cast<uint32_t>(all[j]) >= r.begin &&
                    static_cast<uint32_t>(all[j]) < r.end)
                    owners.insert(s);
            }
        }
    }
    const uint32_t pairs = tokens * k, xrows = down ? pairs : tokens;
    uint64_t table = sharded_weight(JAL_DT_MXFP4, experts * n, kdim, slices, n, experts, 300);
    uint64_t x = upload(random_tensor(JAL_DT_F32, xrows, kdim, 6), JAL_PLACE_REPLICATED, sm);
    uint64_t idv = upload_vec(ids, JAL_PLACE_REPLICATED, sm);
    uint64_t bias = upload(random_tensor(JAL_DT_F32, experts, n, 7), JAL_PLACE_REPLICATED, sm);
    uint64_t y = alloc(uint64_t{pairs} * n * 4, JAL_PLACE_INTERLEAVED, sm);
    auto words = jl::expert_gemm_args(
        c, tensor(x, xrows, kdim, JAL_DT_F32), tensor(idv, tokens, k, JAL_DT_I32), table,
        tensor(1, experts * n, kdim, JAL_DT_MXFP4), tensor(bias, experts, n, JAL_DT_F32),
        tensor(y, pairs, n, JAL_DT_F32));
    Measured r = measure(jl::build_expert_gemm(c), words, sm);
    const uint32_t active = static_cast<uint32_t>(owners.size());
    const std::string shape = fmt::format("T={} k={} E={} N={} K={}", tokens, k, experts, n, kdim);
    const uint64_t flops = jl::expert_gemm_flops(c);
    // Only the slices owning a selected expert work: the roofline counts those.
    Roofline roof = roofline(r.report.hbm_bytes, 2ull * pairs * n * kdim,
                             mma_format(JAL_DT_MXFP4, numerics), active, r.report.modelled_ns);
    row(kernel, shape, active, r, tokens <= 4 ? roof.hbm : roof.mma, roof.bound, flops,
        {pairs, n, kdim}, &roof);
}

void KernelBench::embedding(uint32_t tokens, uint32_t vocab, uint32_t dim, uint32_t slices)
{
    if (!wanted("embedding")) return;
    progress(fmt::format("embedding tokens={} vocab={} dim={} (BF16 table) on {} slices", tokens,
                         vocab, dim, slices));
    mem_.clear();
    const uint64_t sm = mask(slices);
    jl::EmbeddingConfig c{.tokens = tokens, .vocab = vocab, .dim = dim, .table = JAL_DT_BF16};
    // The table replicated on the slices (each gathers locally); its content does not change
    // the modelled time, so only the rows the ids name are written.
    uint64_t table = alloc(uint64_t{vocab} * dim * 2, JAL_PLACE_REPLICATED, sm);
    std::mt19937_64 rng(8);
    std::vector<int32_t> ids(tokens);
    std::vector<uint8_t> rowdata = random_tensor(JAL_DT_BF16, 1, dim, 9);
    for (int32_t& id : ids) {
        id = static_cast<int32_t>(rng() % vocab);
        write(table + uint64_t(id) * dim * 2, rowdata.data(), rowdata.size());
    }
    uint64_t idv = upload_vec(ids, JAL_PLACE_INTERLEAVED, sm);
    uint64_t out = alloc(uint64_t{tokens} * dim * 4, JAL_PLACE_INTERLEAVED, sm);
    Measured r = measure(jl::build_embedding(c),
                         jl::embedding_args(c, tensor(idv, tokens, 1, JAL_DT_I32),
                                            tensor(table, vocab, dim, JAL_DT_BF16),
                                            tensor(out, tokens, dim, JAL_DT_F32)),
                         sm);
    double roof = r.report.hbm_bytes / (r.report.modelled_ns * kHbmBytesPerNs * slices);
    row("embedding", fmt::format("T={} V={} D={} BF16", tokens, vocab, dim), slices, r, roof, "HBM",
        0);
}

void KernelBench::argmax(uint32_t rows, uint32_t vocab, uint32_t slices)
{
    if (!wanted("argmax")) return;
    progress(fmt::format("argmax rows={} vocab={} on {} slices", rows, vocab, slices));
    mem_.clear();
    const uint64_t sm = mask(slices);
    jl::ArgmaxConfig c{.rows = rows, .vocab = vocab};
    uint64_t logits = upload(random_tensor(JAL_DT_F32, rows, vocab, 10), JAL_PLACE_REPLICATED, sm);
    uint64_t idx = alloc(rows * 4, JAL_PLACE_INTERLEAVED, sm),
             val = alloc(rows * 4, JAL_PLACE_INTERLEAVED, sm);
    Measured r =
        measure(jl::build_argmax(c),
                jl::argmax_args(c, tensor(logits, rows, vocab, JAL_DT_F32),
                                tensor(idx, rows, 1, JAL_DT_I32), tensor(val, rows, 1, JAL_DT_F32)),
                sm);
    double roof = r.report.hbm_bytes / (r.report.modelled_ns * kHbmBytesPerNs * slices);
    row("argmax", fmt::format("rows={} V={}", rows, vocab), slices, r, roof, "HBM", 0);
}

void KernelBench::all_reduce(uint32_t length, uint32_t slices)
{
    if (!wanted("all_reduce")) return;
    progress(fmt::format("all_reduce length={} on {} slices", length, slices));
    mem_.clear();
    std::vector<uint64_t> table;
    for (uint32_t s = 0; s < slices; s++)
        table.push_back(upload(random_tensor(JAL_DT_F32, 1, length, 20 + s), JAL_PLACE_SLICE,
                               1ull << usable_[s]));
    uint64_t t = upload_vec(table, JAL_PLACE_INTERLEAVED, mask(slices));
    jl::AllReduceConfig c{.length = length};
    Measured r = measure(jl::build_all_reduce(c), jl::all_reduce_args(c, t), mask(slices));
    // Network roofline: each slice sends 2(n−1)/n of the vector over its link.
    double sent = 2.0 * (slices - 1) / slices * length * 4;
    double roof = sent / (r.report.modelled_ns * kNetBytesPerNs);
    row("all_reduce", fmt::format("L={} F32", length), slices, r, roof, "network", 0);
}

void KernelBench::quantize(uint32_t m, uint32_t k, uint32_t slices)
{
    if (!wanted("quantize")) return;
    progress(fmt::format("quantize {}x{} to MXFP4 on {} slices", m, k, slices));
    mem_.clear();
    const uint64_t sm = mask(slices);
    jl::QuantizeConfig c{.m = m, .k = k, .out = JAL_DT_MXFP4};
    uint64_t x = upload(random_tensor(JAL_DT_F32, m, k, 30), JAL_PLACE_INTERLEAVED, sm);
    uint64_t out =
        alloc(uint64_t{m} * jl::packed_row_bytes(JAL_DT_MXFP4, k), JAL_PLACE_INTERLEAVED, sm);
    Measured r = measure(
        jl::build_quantize(c),
        jl::quantize_args(c, tensor(x, m, k, JAL_DT_F32), tensor(out, m, k, JAL_DT_MXFP4)), sm);
    double roof = r.report.hbm_bytes / (r.report.modelled_ns * kHbmBytesPerNs * slices);
    row("quantize_mxfp4", fmt::format("M={} K={}", m, k), slices, r, roof, "HBM", 0);
}

json KernelBench::run_all()
{
    const bool q = opt_.quick;
    const uint32_t hidden = 2880, width = 2880, vocab = q ? 32768 : 201088, experts = 32;
    const uint32_t tokens = q ? 128 : 512, moe_tokens = q ? 32 : 128;
    const uint32_t all = static_cast<uint32_t>(std::min<size_t>(usable_.count(), 64));
    // Decode: one token. Hidden-size GEMVs on one slice (their 4.4 MB of MXFP4 spread over
    // more slices would leave each less time than the dispatch's fixed costs) and on 8; the
    // output projection (vocab rows) over every slice.
    for (jal_dtype w : {JAL_DT_MXFP4, JAL_DT_MXFP8_E4M3, JAL_DT_BF16})
        gemv(w, jl::Numerics::native, 1, hidden, hidden, 1);
    gemv(JAL_DT_MXFP4, jl::Numerics::ggml, 1, hidden, hidden, 1);
    gemv(JAL_DT_MXFP4, jl::Numerics::ggml, 1, hidden, hidden, 8);
    gemv(JAL_DT_MXFP4, jl::Numerics::ggml, 4, hidden, hidden, 1);
    gemv(JAL_DT_MXFP4, jl::Numerics::ggml, 1, vocab, hidden, all);
    // Prefill: MXFP4×MXFP4 from activations quantized once.
    gemm_prefill(tokens, hidden, hidden, 1, jl::Numerics::fast);
    gemm_prefill(tokens, hidden, hidden, 4, jl::Numerics::fast);
    gemm_prefill(tokens, hidden, hidden, 1, jl::Numerics::ggml);
    expert(1, false, experts, width, hidden, experts, jl::Numerics::ggml);
    expert(1, true, experts, width, hidden, experts, jl::Numerics::ggml);
    expert(moe_tokens, false, experts, width, hidden, experts, jl::Numerics::fast);
    expert(moe_tokens, true, experts, width, hidden, experts, jl::Numerics::fast);
    embedding(1, vocab, hidden, 1);
    embedding(tokens, vocab, hidden, 8);
    argmax(1, vocab, all);
    argmax(8, vocab, all);
    all_reduce(hidden, 8);
    all_reduce(tokens * hidden, 8);
    quantize(1, hidden, 1);
    quantize(tokens, hidden, 8);
    json doc;
    doc["kernels"] = rows_;
    try {  // the compute clock in force: MMA and vector rates scale with it, HBM does not
        jal::OpenOptions o;
        o.emu_dir = opt_.emu_dir;
        o.client_name = "jal-bench";
        doc["clock_mhz"] = jal::ChipFunction::open(opt_.device, o).telemetry().clock_mhz;
    } catch (const std::exception&) {
        doc["clock_mhz"] = nullptr;
    }
    doc["usable_slices"] = usable_.count();
    doc["quick"] = q;
    return doc;
}

}  // namespace

json run_kernel_bench(const KernelBenchOptions& options)
{
    KernelBench bench(options);
    return bench.run_all();
}

std::string format_kernel_table(const json& doc)
{
    std::ostringstream o;
    if (doc.contains("clock_mhz") && !doc["clock_mhz"].is_null())
        o << fmt::format("compute clock {} MHz (peaks are at 2000 MHz)\n",
                         doc["clock_mhz"].get<uint32_t>());
    o << fmt::format("{:<20} {:<28} {:>6} {:>12} {:>9} {:>8} {:>11} {:>9}\n", "kernel", "shape",
                     "slices", "modelled_us", "roofline", "bound", "host_gflops", "vs_sgemm");
    for (const json& r : doc["kernels"]) {
        std::string vs =
            r["vs_sgemm"].is_null() ? "-" : fmt::format("{:.3f}", r["vs_sgemm"].get<double>());
        o << fmt::format("{:<20} {:<28} {:>6} {:>12.2f} {:>8.1f}% {:>8} {:>11.2f} {:>9}\n",
                         r["kernel"].get<std::string>(), r["shape"].get<std::string>(),
                         r["slices"].get<uint32_t>(), r["modelled_us"].get<double>(),
                         100 * r["roofline_fraction"].get<double>(), r["bound"].get<std::string>(),
                         r["host_gflops"].get<double>(), vs);
    }
    return o.str();
}

}  // namespace jal::bench
