// The device's usable logical slices, for benchmarks that run on the first n of them.
#pragma once

#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include <jal/error.hpp>

namespace jal::bench {

class UsableSlices {
public:
    UsableSlices() = default;
    explicit UsableSlices(uint64_t mask)
    {
        for (uint32_t s = 0; s < 64; s++)
            if (mask & (1ull << s)) slices_.push_back(s);
    }
    uint32_t count() const { return static_cast<uint32_t>(slices_.size()); }
    uint32_t operator[](uint32_t i) const { return slices_[i]; }
    // The mask of the first n usable slices; throws jal::Error if there are fewer.
    uint64_t first(uint32_t n) const
    {
        if (n > slices_.size())
            throw jal::Error(JAL_STATUS_INVALID_FIELD,
                             fmt::format("{} slices wanted, {} usable", n, slices_.size()));
        uint64_t m = 0;
        for (uint32_t i = 0; i < n; i++) m |= 1ull << slices_[i];
        return m;
    }

private:
    std::vector<uint32_t> slices_;
};

}  // namespace jal::bench
