// The staging upload of upload.hpp, and the test download.
#include "upload.hpp"

#include <jal/kernels/library/gemm.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace jal::model::detail {

void upload_pieces(const runtime::Device& device, runtime::Queue& queue,
                   const std::vector<UploadPiece>& pieces,
                   const std::function<void(uint64_t, uint64_t)>& progress)
{
    uint64_t total = 0, done = 0;
    for (const UploadPiece& p : pieces) total += p.bytes;
    constexpr size_t kHalf = 16u << 20;
    runtime::HostBuffer staging(device, 2 * kHalf);
    runtime::Signal sig[2] = {runtime::Signal(device, 0, true), runtime::Signal(device, 0, true)};
    bool busy[2] = {false, false};
    int half = 0;
    size_t fill = 0;
    std::vector<std::pair<uint64_t, std::pair<size_t, size_t>>> copies;  // va, (offset, bytes)
    auto wait = [&](int h) {
        if (!busy[h]) return;
        auto r = sig[h].wait_zero(std::chrono::minutes(5));
        if (!r.satisfied || r.status != JAL_STATUS_OK)
            throw Error(r.satisfied ? r.status : JAL_STATUS_TIMEOUT,
                        "model runtime: uploading weights failed");
        busy[h] = false;
    };
    auto flush = [&]() {
        if (copies.empty()) return;
        sig[half].store(static_cast<int64_t>(copies.size()));
        for (auto& [dst, range] : copies)
            queue.copy_to_device(dst, staging, range.first, range.second, &sig[half]);
        busy[half] = true;
        copies.clear();
        half ^= 1;
        wait(half);
        fill = 0;
        if (progress) progress(done, total);
    };
    std::vector<std::byte> transposed;  // the current piece, when it goes K-major
    for (const UploadPiece& piece : pieces) {
        UploadPiece p = piece;
        if (p.kmajor_rows) {
            transposed.resize(p.bytes);
            jal::kernels::linear::k_major_shard(p.src, p.kmajor_rows, p.kmajor_k, p.kmajor_dtype,
                                                transposed.data());
            p.src = transposed.data();
        }
        for (uint64_t off = 0; off < p.bytes;) {
            if (fill == kHalf) flush();
            const size_t n = std::min<uint64_t>(kHalf - fill, p.bytes - off);
            const size_t at = static_cast<size_t>(half) * kHalf + fill;
            std::memcpy(staging.data() + at, p.src + off, n);
            copies.push_back({p.va + off, {at, n}});
            fill = (fill + n + 63) & ~size_t{63};
            fill = std::min(fill, kHalf);
            off += n;
            done += n;
        }
    }
    flush();
    wait(0), wait(1);
    if (progress) progress(total, total);
}

std::vector<uint8_t> download_data(const Placement& placement, jal::kernels::Launcher& launch,
                                   uint64_t max_bytes)
{
    const auto ranges = placement.data_ranges();
    size_t total = 0;
    for (auto [addr, bytes] : ranges) total += std::min(bytes, max_bytes);
    std::vector<uint8_t> out(total);
    size_t at = 0;
    for (auto [addr, bytes] : ranges) {
        const size_t n = std::min(bytes, max_bytes);
        launch.download(out.data() + at, addr, n);
        at += n;
    }
    return out;
}

}  // namespace jal::model::detail
