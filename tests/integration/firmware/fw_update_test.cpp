// Firmware update through a real jal-emu and libjal: the chip's boot ROM verifies what is
// downloaded, boots a good image on trial, keeps the old one for every bad kind, and falls
// back when the new image never reaches READY (docs/firmware.md 10).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "common/fw_images.hpp"
#include "fixture/emu_process.hpp"

namespace {

using jal::test::Bytes;
using jal::test::signed_image;

Bytes factory_body()
{
    return jal::test::build_body(jal::test::bin_path("jal-fw.bin"));
}

class FwUpdateTest : public jal::test::EmuTest {
protected:
    void SetUp() override
    {
        EmuTest::SetUp();
        dev_.emplace(open_ready());
    }

    jal::ChipFunction& dev() { return *dev_; }

    // Downloads and activates; returns the outcome, or throws what activation threw.
    jal::ResetOutcome update(const Bytes& image)
    {
        dev().firmware_download(image.data(), image.size());
        return dev().reset(jal::ResetMethod::firmware_update, jal::test::kBootTimeout);
    }

    std::optional<jal::ChipFunction> dev_;
};

TEST_F(FwUpdateTest, AGoodImageIsInstalledAndTheChipRebootsIntoIt)
{
    const jal_fw_status before = dev().firmware_status();
    EXPECT_EQ(before.running_slot, 0u);
    EXPECT_EQ(before.slots[0].state, JAL_FW_SLOT_VALID);
    EXPECT_EQ(before.slots[1].state, JAL_FW_SLOT_EMPTY);
    EXPECT_EQ(before.rollback_fuses, 1u) << "the factory image's counter, burnt at its first READY";
    const std::uint32_t boots = dev().identify().boot_count;

    const jal::ResetOutcome out = update(signed_image(factory_body(), "0.2.0", 2));
    ASSERT_TRUE(out.came_back) << jal::state_name(out.status.state);
    const jal_fw_status after = dev().firmware_status();
    EXPECT_EQ(after.running_slot, 1u);
    EXPECT_EQ(after.flags, 0u) << "confirmed at READY: no longer on trial";
    EXPECT_EQ(after.slots[1].fw_version, 2u << 8);
    EXPECT_EQ(after.rollback_fuses, 2u);
    EXPECT_EQ(after.slots[0].reject_reason, JAL_FW_IMAGE_ROLLED_BACK);
    EXPECT_EQ(dev().identify().boot_count, boots + 1);
    EXPECT_EQ(dev().status().state, jal::DeviceState::ready);
}

TEST_F(FwUpdateTest, EachBadImageIsRejectedAndTheOldImageKeepsRunning)
{
    const Bytes good = signed_image(factory_body(), "0.3.0", 1);
    const std::vector<std::pair<const char*, Bytes>> bad = {
        {"unsigned", factory_body()},
        {"corrupted body", jal::test::flipped(good, JAL_FW_HEADER_SIZE + 1000)},
        {"corrupted header", jal::test::flipped(good, offsetof(jal_fw_image_header, rollback))},
        {"truncated", Bytes(good.begin(), good.begin() + good.size() / 2)},
        {"signed with another key",
         signed_image(factory_body(), "0.3.0", 1, jal::fwimage::generate_key_pem())},
        {"rolled back", signed_image(factory_body(), "0.3.0", 0)}};
    const std::uint32_t boots = dev().identify().boot_count;
    const std::uint32_t generation = dev().status().reset_generation;
    for (const auto& [kind, image] : bad) {
        SCOPED_TRACE(kind);
        try {
            update(image);
            ADD_FAILURE() << "accepted";
        } catch (const jal::Error& e) {
            EXPECT_EQ(e.status(), JAL_STATUS_IMAGE_REJECTED) << e.what();
        }
        const jal_fw_status st = dev().firmware_status();
        EXPECT_EQ(st.running_slot, 0u);
        EXPECT_EQ(st.flags & JAL_FW_STATUS_UPDATE_READY, 0u);
        EXPECT_EQ(st.slots[1].state, JAL_FW_SLOT_INVALID);
        EXPECT_EQ(dev().identify().boot_count, boots) << "not reset";
        EXPECT_EQ(dev().status().reset_generation, generation);
        EXPECT_EQ(dev().status().state, jal::DeviceState::ready);
    }
    // And a good one still goes in afterwards.
    ASSERT_TRUE(update(good).came_back);
    EXPECT_EQ(dev().firmware_status().running_slot, 1u);
}

TEST_F(FwUpdateTest, AnImageThatNeverReachesReadyFallsBackToThePreviousOne)
{
    if (const char* args = std::getenv("JAL_TEST_EMU_ARGS");
        args && std::string(args).find("native") != std::string::npos)
        GTEST_SKIP() << "the native firmware does not run the image's body";
    const std::uint32_t boots = dev().identify().boot_count;
    const jal::ResetOutcome out = update(signed_image(jal::test::hanging_body(), "0.9.0", 1));
    ASSERT_TRUE(out.came_back) << jal::state_name(out.status.state);
    const jal_fw_status st = dev().firmware_status();
    EXPECT_EQ(st.running_slot, 0u);
    EXPECT_EQ(st.flags, JAL_FW_STATUS_FELL_BACK);
    EXPECT_EQ(st.failed_slot, 1u);
    EXPECT_EQ(st.slots[1].fw_version, 9u << 8);
    // The trial boot and the boot after its watchdog reset.
    EXPECT_EQ(dev().identify().boot_count, boots + 2);
    EXPECT_EQ(dev().telemetry().watchdog_resets, 1u);
}

}  // namespace
