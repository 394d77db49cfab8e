// Firmware update through the admin queue: FW_STATUS, FW_DOWNLOAD, FW_ACTIVATE.
#include <jal/chip_function.hpp>

#include <jal/hw/admin.h>
#include <jal/hw/fw_image.h>

#include "chip_function_impl.hpp"

namespace jal {

namespace {
// Several commands per image, so progress can be shown and each stays far under the
// admin timeout.
constexpr size_t kChunkBytes = 128 * 1024;
}  // namespace

jal_fw_status ChipFunction::firmware_status()
{
    return impl_->guarded([&] {
        auto reply = impl_->run(JAL_ADMIN_FW_STATUS, {}, sizeof(jal_fw_status));
        if (reply.completion.result < sizeof(jal_fw_status))
            throw Error(JAL_STATUS_PROTOCOL,
                        "FW_STATUS reply has " + std::to_string(reply.completion.result) +
                            " bytes, expected " + std::to_string(sizeof(jal_fw_status)));
        return copy_struct<jal_fw_status>(reply.data);
    });
}

void ChipFunction::firmware_download(const void* image, size_t bytes,
                                     const std::function<void(size_t)>& progress)
{
    impl_->guarded([&] {
        if (bytes == 0 || bytes > JAL_FW_SLOT_BYTES)
            throw Error(JAL_STATUS_INVALID_LENGTH, "a firmware image has 1 to " +
                                                       std::to_string(JAL_FW_SLOT_BYTES) +
                                                       " bytes, not " + std::to_string(bytes));
        const auto* p = static_cast<const std::byte*>(image);
        for (size_t done = 0; done < bytes;) {
            const auto n = static_cast<uint32_t>(std::min(kChunkBytes, bytes - done));
            impl_->run(JAL_ADMIN_FW_DOWNLOAD, {static_cast<uint32_t>(done)}, n, p + done);
            done += n;
            if (progress) progress(done);
        }
    });
}

void firmware_activate(ChipFunction::Impl& impl)
{
    jal_admin_sqe sqe{};
    sqe.opcode = JAL_ADMIN_FW_ACTIVATE;
    const RawAdminResult r = impl.wait_raw(impl.submit_raw(sqe, 0));
    if (r.completion.status == JAL_STATUS_IMAGE_REJECTED)
        throw Error(JAL_STATUS_IMAGE_REJECTED,
                    std::string("the chip's boot ROM rejected the image: ") +
                        jal_fw_image_error_name(r.completion.result) +
                        "; the running firmware is unchanged");
    if (r.completion.status != JAL_STATUS_OK)
        throw Error(r.completion.status, std::string("admin command FW_ACTIVATE failed: ") +
                                             jal_status_name(r.completion.status));
}

}  // namespace jal
