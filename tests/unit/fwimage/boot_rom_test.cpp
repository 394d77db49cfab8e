// The emulator's boot ROM (emu/mgmt/boot_rom.hpp) through its FWU registers, with host
// memory faked: slots, verification at activation and at boot, trial boots and fall-back,
// the rollback fuses.
#include <gtest/gtest.h>

#include "common/fw_images.hpp"
#include "emu/mgmt/boot_rom.hpp"
#include "jal/hw/status.h"

namespace {

using jal::emu::BootRom;
using jal::test::Bytes;
using jal::test::hanging_body;
using jal::test::signed_image;

constexpr std::uint32_t reg(std::uint32_t abs)
{
    return abs - JAL_MGMT_PERIPH_BASE - JAL_MGMT_FWU;
}

class BootRomTest : public ::testing::Test {
protected:
    BootRomTest() : rom_(0, std::string(jal::fwimage::dev_public_key_pem()))
    {
        EXPECT_TRUE(rom_.provision(signed_image(hanging_body(), "0.1.0", 1)).ok());
    }

    // "Host memory" is `host_`; a bus address is an offset into it.
    BootRom::Dma dma()
    {
        return [this](std::uint32_t, std::uint64_t addr, void* local, std::uint32_t len,
                      bool to_host) -> std::uint32_t {
            if (addr + len > host_.size()) return JAL_STATUS_DMA_FAULT;
            if (to_host)
                std::memcpy(host_.data() + addr, local, len);
            else
                std::memcpy(local, host_.data() + addr, len);
            return JAL_STATUS_OK;
        };
    }

    std::uint32_t command(std::uint32_t cmd, std::uint32_t offset = 0, std::uint32_t len = 0)
    {
        rom_.write(reg(JAL_FWU_HOST_LO), 0, dma());
        rom_.write(reg(JAL_FWU_LEN), len, dma());
        rom_.write(reg(JAL_FWU_OFFSET), offset, dma());
        rom_.write(reg(JAL_FWU_CMD), cmd, dma());
        return rom_.read(reg(JAL_FWU_STATUS));
    }

    // Downloads `image` in two chunks; returns the ACTIVATE status.
    std::uint32_t update(const Bytes& image)
    {
        const auto half = static_cast<std::uint32_t>(image.size() / 2);
        host_.assign(image.begin(), image.begin() + half);
        EXPECT_EQ(command(JAL_FWU_CMD_WRITE, 0, half), JAL_STATUS_OK);
        host_.assign(image.begin() + half, image.end());
        EXPECT_EQ(command(JAL_FWU_CMD_WRITE, half, static_cast<std::uint32_t>(host_.size())),
                  JAL_STATUS_OK);
        return command(JAL_FWU_CMD_ACTIVATE);
    }

    BootRom rom_;
    Bytes host_;
};

TEST_F(BootRomTest, AnActivatedImageBootsOnTrialAndConfirmingItBurnsItsRollbackCounter)
{
    EXPECT_EQ(rom_.select(JAL_RESET_CAUSE_POWER_ON).slot, 0u);
    rom_.write(reg(JAL_FWU_CMD), JAL_FWU_CMD_CONFIRM, dma());
    EXPECT_EQ(rom_.status().rollback_fuses, 1u);

    ASSERT_EQ(update(signed_image(hanging_body(), "0.2.0", 3)), JAL_STATUS_OK);
    EXPECT_TRUE(rom_.status().flags & JAL_FW_STATUS_UPDATE_READY);
    const BootRom::Boot boot = rom_.select(JAL_RESET_CAUSE_HOST);
    EXPECT_EQ(boot.slot, 1u);
    EXPECT_TRUE(boot.trial);
    EXPECT_EQ(boot.body, hanging_body());
    EXPECT_EQ(rom_.read(reg(JAL_FWU_RUNNING_VERSION)), 2u << 8);
    // While on trial the other slot is the fall-back: not writable.
    EXPECT_EQ(command(JAL_FWU_CMD_WRITE, 0, 1), JAL_STATUS_BUSY);
    rom_.write(reg(JAL_FWU_CMD), JAL_FWU_CMD_CONFIRM, dma());
    const jal_fw_status st = rom_.status();
    EXPECT_EQ(st.running_slot, 1u);
    EXPECT_EQ(st.flags, 0u);
    EXPECT_EQ(st.rollback_fuses, 3u);
    EXPECT_EQ(st.slots[0].state, JAL_FW_SLOT_INVALID);  // below the fuses now
    EXPECT_EQ(st.slots[0].reject_reason, JAL_FW_IMAGE_ROLLED_BACK);
    EXPECT_EQ(rom_.select(JAL_RESET_CAUSE_WATCHDOG).slot, 1u);  // and stays
}

TEST_F(BootRomTest, ATrialThatResetsBeforeConfirmingFallsBack)
{
    rom_.select(JAL_RESET_CAUSE_POWER_ON);
    rom_.write(reg(JAL_FWU_CMD), JAL_FWU_CMD_CONFIRM, dma());
    ASSERT_EQ(update(signed_image(hanging_body(), "0.3.0", 1)), JAL_STATUS_OK);
    EXPECT_TRUE(rom_.select(JAL_RESET_CAUSE_HOST).trial);
    const BootRom::Boot back = rom_.select(JAL_RESET_CAUSE_WATCHDOG);
    EXPECT_EQ(back.slot, 0u);
    EXPECT_FALSE(back.trial);
    const jal_fw_status st = rom_.status();
    EXPECT_EQ(st.running_slot, 0u);
    EXPECT_EQ(st.flags, JAL_FW_STATUS_FELL_BACK);
    EXPECT_EQ(st.failed_slot, 1u);
    EXPECT_EQ(rom_.select(JAL_RESET_CAUSE_HOST).slot, 0u);  // no second try by itself
}

TEST_F(BootRomTest, BadImagesAreRejectedAndNothingChanges)
{
    rom_.select(JAL_RESET_CAUSE_POWER_ON);
    rom_.write(reg(JAL_FWU_CMD), JAL_FWU_CMD_CONFIRM, dma());
    const Bytes good = signed_image(hanging_body(), "0.2.0", 1);
    const std::vector<std::pair<Bytes, jal_fw_image_error>> bad = {
        {hanging_body(), JAL_FW_IMAGE_NOT_SIGNED},
        {jal::test::flipped(good, good.size() - 3), JAL_FW_IMAGE_BAD_HASH},
        {jal::test::flipped(good, 12), JAL_FW_IMAGE_BAD_SIGNATURE},
        {Bytes(good.begin(), good.end() - 16), JAL_FW_IMAGE_TRUNCATED},
        {signed_image(hanging_body(), "0.2.0", 1, jal::fwimage::generate_key_pem()),
         JAL_FW_IMAGE_BAD_SIGNATURE},
        {signed_image(hanging_body(), "0.2.0", 0), JAL_FW_IMAGE_ROLLED_BACK}};
    for (const auto& [image, why] : bad) {
        EXPECT_EQ(update(image), JAL_STATUS_IMAGE_REJECTED);
        EXPECT_EQ(rom_.read(reg(JAL_FWU_DETAIL)), static_cast<std::uint32_t>(why));
        EXPECT_FALSE(rom_.status().flags & JAL_FW_STATUS_UPDATE_READY);
        const BootRom::Boot boot = rom_.select(JAL_RESET_CAUSE_HOST);
        EXPECT_EQ(boot.slot, 0u);
        EXPECT_FALSE(boot.trial);
    }
}

TEST_F(BootRomTest, WritesAreSequentialAndBounded)
{
    host_.assign(64, 0);
    EXPECT_EQ(command(JAL_FWU_CMD_WRITE, 0, 64), JAL_STATUS_OK);
    EXPECT_EQ(rom_.read(reg(JAL_FWU_DETAIL)), 64u);
    EXPECT_EQ(command(JAL_FWU_CMD_WRITE, 128, 64), JAL_STATUS_INVALID_FIELD);  // a gap
    EXPECT_EQ(command(JAL_FWU_CMD_WRITE, 64, 0), JAL_STATUS_OUT_OF_RANGE);
    EXPECT_EQ(command(JAL_FWU_CMD_WRITE, 64, JAL_FW_SLOT_BYTES), JAL_STATUS_OUT_OF_RANGE);
    EXPECT_EQ(command(JAL_FWU_CMD_WRITE, 64, 128), JAL_STATUS_DMA_FAULT);  // beyond host memory
    EXPECT_EQ(rom_.status().staged_bytes, 64u);
    EXPECT_EQ(command(JAL_FWU_CMD_STATUS, 0, 8), JAL_STATUS_INVALID_LENGTH);
    EXPECT_EQ(command(99), JAL_STATUS_INVALID_FIELD);
}

TEST(BootRom, WithoutAFactoryImageTheNativeFirmwareStillBoots)
{
    BootRom rom(0, std::string(jal::fwimage::dev_public_key_pem()));
    EXPECT_FALSE(rom.provision(hanging_body()).ok());  // unsigned: refused, slot A empty
    const BootRom::Boot boot = rom.select(JAL_RESET_CAUSE_POWER_ON);
    EXPECT_TRUE(boot.body.empty());
    EXPECT_EQ(rom.status().slots[0].state, JAL_FW_SLOT_EMPTY);
}

}  // namespace
