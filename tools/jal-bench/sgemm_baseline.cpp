// OpenBLAS single-thread SGEMM timing (sgemm_baseline.hpp).
#include "sgemm_baseline.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include <cblas.h>

extern "C" void openblas_set_num_threads(int threads);  // OpenBLAS's own, not in every cblas.h

namespace jal::bench {

double sgemm_gflops(uint32_t m, uint32_t n, uint32_t k, double min_seconds)
{
    openblas_set_num_threads(1);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> d(-1, 1);
    std::vector<float> a(size_t{m} * k), b(size_t{n} * k), c(size_t{m} * n);
    for (float& f : a) f = d(rng);
    for (float& f : b) f = d(rng);
    double best = 1e30, total = 0;
    for (int rep = 0; rep < 20 && (rep < 2 || total < min_seconds); rep++) {
        auto t0 = std::chrono::steady_clock::now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m),
                    static_cast<int>(n), static_cast<int>(k), 1.0f, a.data(), static_cast<int>(k),
                    b.data(), static_cast<int>(k), 0.0f, c.data(), static_cast<int>(n));
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::min(best, s);
        total += s;
    }
    return 2.0 * m * n * k / best / 1e9;
}

}  // namespace jal::bench
