// The linear kernels' host calls: checked argument words (args.cpp) into one dispatch.
#include <jal/kernels/library/argmax.hpp>
#include <jal/kernels/library/collective.hpp>
#include <jal/kernels/library/embedding.hpp>
#include <jal/kernels/library/expert_gemm.hpp>
#include <jal/kernels/library/gemm.hpp>
#include <jal/kernels/library/quantize.hpp>

namespace jal::kernels::linear {

namespace {
Args args_of(const std::vector<uint64_t>& words)
{
    Args a;
    for (uint64_t w : words) a.u64(w);
    return a;
}
}  // namespace

jal_dispatch_report gemm(Launcher& launcher, const Program& program, const GemmConfig& c,
                         const TensorRef& x, uint64_t w_shards, const TensorRef& w,
                         const TensorRef& bias, const TensorRef& y, const DispatchOptions& options)
{
    return launcher.run(program, args_of(gemm_args(c, x, w_shards, w, bias, y)), options);
}

jal_dispatch_report quantize(Launcher& launcher, const Program& program, const QuantizeConfig& c,
                             const TensorRef& x, const TensorRef& out,
                             const DispatchOptions& options)
{
    return launcher.run(program, args_of(quantize_args(c, x, out)), options);
}

jal_dispatch_report embedding(Launcher& launcher, const Program& program, const EmbeddingConfig& c,
                              const TensorRef& ids, const TensorRef& table, const TensorRef& out,
                              const DispatchOptions& options)
{
    return launcher.run(program, args_of(embedding_args(c, ids, table, out)), options);
}

jal_dispatch_report argmax(Launcher& launcher, const Program& program, const ArgmaxConfig& c,
                           const TensorRef& logits, const TensorRef& out_index,
                           const TensorRef& out_value, const DispatchOptions& options)
{
    return launcher.run(program, args_of(argmax_args(c, logits, out_index, out_value)), options);
}

jal_dispatch_report all_reduce(Launcher& launcher, const Program& program, const AllReduceConfig& c,
                               uint64_t vectors_table, const DispatchOptions& options)
{
    return launcher.run(program, args_of(all_reduce_args(c, vectors_table)), options);
}

jal_dispatch_report expert_gemm(Launcher& launcher, const Program& program,
                                const ExpertGemmConfig& c, const TensorRef& x, const TensorRef& ids,
                                uint64_t w_shards, const TensorRef& w, const TensorRef& bias,
                                const TensorRef& y, const DispatchOptions& options)
{
    return launcher.run(program, args_of(expert_gemm_args(c, x, ids, w_shards, w, bias, y)),
                        options);
}

}  // namespace jal::kernels::linear
