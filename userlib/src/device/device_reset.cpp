// Chip reset: request it, then watch STATUS until the chip has gone down and come back,
// reporting what actually happened rather than what was asked for.
#include <jal/chip_function.hpp>

#include <optional>
#include <thread>

#include <jal/hw/admin.h>
#include <jal/hw/pci.h>
#include <jal/hw/regs.h>

#include "../util/deadline.hpp"
#include "chip_function_impl.hpp"

namespace jal {

namespace {

using std::chrono::milliseconds;

constexpr milliseconds kPollInterval{20};
constexpr milliseconds kProgressInterval{1000};
// A reset fast enough to finish between two polls leaves STATUS READY throughout; while
// it has not been seen leaving READY, the boot count is checked this often.
constexpr milliseconds kBootCountCheckAfter{500};

milliseconds since(std::chrono::steady_clock::time_point start)
{
    return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
}

}  // namespace

ResetOutcome ChipFunction::reset(ResetMethod method, milliseconds timeout,
                                 const std::function<void(const ResetProgress&)>& progress)
{
    return impl_->guarded([&] {
        auto start = std::chrono::steady_clock::now();
        util::Deadline deadline(timeout);
        std::optional<uint32_t> boot_count_before;
        DeviceStatus before = impl_->read_status();
        if (before.state == DeviceState::ready) {
            try {
                boot_count_before = identify().boot_count;
            } catch (const Error&) {
                // Without it a very fast reset cannot be told from none; STATUS still can.
            }
        }

        if (method == ResetMethod::admin_command)
            impl_->run(JAL_ADMIN_RESET, {JAL_RESET_CHIP});
        else if (method == ResetMethod::firmware_update)
            firmware_activate(*impl_);
        else
            impl_->backend().write32(JAL_BAR_REGS, JAL_REG_RESET, JAL_RESET_MAGIC);
        // Whatever happens next, the device has forgotten our admin queue.
        impl_->drop_admin_queue();

        ResetOutcome out;
        std::optional<DeviceStatus> last_reported;
        auto last_report_at = start;
        auto next_boot_count_check = start + kBootCountCheckAfter;
        for (;;) {
            out.status = impl_->read_status();
            out.elapsed = since(start);
            DeviceState state = out.status.state;
            // RESET_GENERATION (1.5) moves even when the whole reset fell between two polls.
            if (state != DeviceState::ready ||
                out.status.reset_generation != before.reset_generation)
                out.reset_observed = true;

            bool changed = !last_reported || last_reported->state != state ||
                           last_reported->post_code != out.status.post_code;
            if (progress && (changed || std::chrono::steady_clock::now() - last_report_at >=
                                            kProgressInterval)) {
                progress(ResetProgress{out.status, out.elapsed});
                last_reported = out.status;
                last_report_at = std::chrono::steady_clock::now();
            }

            if (out.reset_observed &&
                (state == DeviceState::ready || state == DeviceState::failed)) {
                out.came_back = state == DeviceState::ready;
                return out;
            }
            if (!out.reset_observed && state == DeviceState::ready && boot_count_before &&
                std::chrono::steady_clock::now() >= next_boot_count_check) {
                next_boot_count_check = std::chrono::steady_clock::now() + kBootCountCheckAfter;
                try {
                    if (identify().boot_count > *boot_count_before) {
                        out.reset_observed = out.came_back = true;
                        return out;
                    }
                } catch (const Error&) {
                    impl_->drop_admin_queue();  // went down under us; keep watching STATUS
                }
            }
            if (deadline.expired()) return out;
            std::this_thread::sleep_for(milliseconds(deadline.poll_ms(kPollInterval)));
        }
    });
}

}  // namespace jal
