// The doorbell pages of this file's queues, each mapped from the driver on first use (the
// driver maps a queue's page only into the file that created it). A doorbell write is an
// MMIO write that reaches the device by itself, so there is nothing to kick.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include "../backend.hpp"
#include "kmd_file.hpp"

namespace jal::kmd {

class KmdDoorbells final : public backend::DoorbellMapping {
public:
    explicit KmdDoorbells(std::shared_ptr<const KmdFile> file) : file_(std::move(file)) {}
    ~KmdDoorbells() override;

    std::byte* page(uint32_t queue_id) override;
    void kick() override {}

    // The driver revoked the page (queue destroyed, chip reset): map afresh next time.
    void forget(uint32_t queue_id);
    void forget_all();

private:
    std::shared_ptr<const KmdFile> file_;
    std::mutex mutex_;
    std::map<uint32_t, std::byte*> pages_;
};

}  // namespace jal::kmd
