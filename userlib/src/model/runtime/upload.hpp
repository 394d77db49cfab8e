// Weights onto the chip through a pinned staging buffer (docs/model-runtime.md,
// "Placement"), and the placed data back for the tests: shared by the model runtimes of
// every architecture.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include <jal/jal.hpp>
#include <jal/kernels/dispatch.hpp>

#include "placement.hpp"

namespace jal::model::detail {

struct UploadPiece {
    uint64_t va;
    const std::byte* src;
    uint64_t bytes;
    // kmajor_rows > 0: src is that many packed rows of kmajor_k elements of kmajor_dtype
    // (bytes in all), uploaded K-major (lin::k_major_shard): a K-major GEMM's shard.
    uint32_t kmajor_rows = 0, kmajor_k = 0;
    jal_dtype kmajor_dtype = JAL_DT_F32;
};

// Copies every piece host → a 32 MiB pinned buffer in two halves (one fills while the
// other's H2D copies run) → its device address; progress(done, total) after each half.
void upload_pieces(const runtime::Device& device, runtime::Queue& queue,
                   const std::vector<UploadPiece>& pieces,
                   const std::function<void(uint64_t, uint64_t)>& progress);

// Adds to launch's batch the download of the first max_bytes of each of placement's data
// ranges, one after the other, into the buffer returned: it holds them once the batch has run
// (read_back_data_for_test).
std::vector<uint8_t> download_data(const Placement& placement, jal::kernels::Launcher& launch,
                                   uint64_t max_bytes);

}  // namespace jal::model::detail
