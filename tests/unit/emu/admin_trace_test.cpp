// jal-emu --trace's admin track: the host interface recognises the firmware's DMA of a
// function's admin rings (an SQ entry fetched whole, a CQ entry's phase written last) and
// AdminTrace turns each command into one named span; other DMA (data buffers, addresses
// outside the rings, a disabled queue) is not a command.
#include "emu/chip/host_interface.hpp"
#include "emu/trace/admin_trace.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <vector>

#include "jal/hw/regs.h"
#include "jal/hw/status.h"

namespace {

namespace fs = std::filesystem;
using jal::emu::AdminTrace;
using jal::emu::HostInterface;
using nlohmann::json;

constexpr std::uint64_t kBus = 0x10000, kBytes = 0x4000;
constexpr std::uint64_t kSq = kBus, kCq = kBus + 0x1000, kData = kBus + 0x2000;
constexpr std::uint32_t kEntries = 4;

struct NoEvents : jal::emu::HostEvents {
    void raise(std::uint32_t) override {}
    void request_reset(std::uint32_t) override {}
};

class AdminTraceTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        path_ = fs::temp_directory_path() / ("admin-trace-" + std::to_string(::getpid()));
        trace_.writer = std::make_shared<jal::emu::TraceWriter>(path_.string());
        admin_ = std::make_unique<AdminTrace>(trace_);
        host_.on_admin_fetch = [this](std::uint32_t fn, const jal_admin_sqe& s) {
            ++fetches_;
            admin_->fetched(fn, s);
        };
        host_.on_admin_complete = [this](std::uint32_t fn, const jal_admin_cqe& c) {
            ++completions_;
            admin_->completed(fn, c);
        };
        fn_ = host_.attach();
        ASSERT_GE(fn_, 0);
        memfd_ = memfd_create("admin-trace-test", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        ASSERT_EQ(ftruncate(memfd_, kBytes), 0);
        ASSERT_EQ(fcntl(memfd_, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
        ASSERT_EQ(host_.memory(fn_).map(kBus, kBytes, memfd_, 0), JAL_STATUS_OK);
        reg(JAL_REG_ADMIN_SQ_BASE_LO, kSq);
        reg(JAL_REG_ADMIN_CQ_BASE_LO, kCq);
        reg(JAL_REG_ADMIN_QSIZE, kEntries | kEntries << 16);
        reg(JAL_REG_ADMIN_CTRL, JAL_ADMIN_CTRL_ENABLE);
    }
    void TearDown() override
    {
        host_.detach(fn_);
        close(memfd_);
        fs::remove(path_);
    }

    void reg(std::uint32_t offset, std::uint64_t v)
    {
        ASSERT_EQ(host_.host_write(fn_, JAL_BAR_REGS, offset, 4, v), JAL_STATUS_OK);
    }
    // What the firmware does for one command (firmware/host/admin_queues.cpp): fetch the
    // entry, maybe copy data, write the completion's body and then its phase.
    void fetch(std::uint32_t slot, std::uint8_t opcode, std::uint16_t cid)
    {
        jal_admin_sqe sqe{};
        sqe.opcode = opcode;
        sqe.cid = cid;
        ASSERT_EQ(host_.dma(fn_, kSq + slot * sizeof sqe, &sqe, sizeof sqe, true), JAL_STATUS_OK);
        ASSERT_EQ(host_.dma(fn_, kSq + slot * sizeof sqe, &sqe, sizeof sqe, false), JAL_STATUS_OK);
    }
    void complete(std::uint32_t slot, std::uint16_t cid, std::uint32_t status)
    {
        jal_admin_cqe cqe{};
        cqe.status = status;
        cqe.result = 7;
        cqe.cid = cid;
        cqe.flags = JAL_ADMIN_CQE_PHASE;
        const std::uint64_t at = kCq + slot * sizeof cqe;
        constexpr std::uint32_t kBody = offsetof(jal_admin_cqe, flags);
        const unsigned before = completions_;
        ASSERT_EQ(host_.dma(fn_, at, &cqe, kBody, true), JAL_STATUS_OK);
        EXPECT_EQ(completions_, before) << "the body alone is not a completion yet";
        ASSERT_EQ(host_.dma(fn_, at + kBody, &cqe.flags, sizeof cqe.flags, true), JAL_STATUS_OK);
        EXPECT_EQ(completions_, before + 1);
    }
    // The admin spans written so far.
    std::vector<json> spans()
    {
        trace_.writer->close();
        std::ifstream in(path_);
        std::vector<json> out;
        for (const json& e : json::parse(in))
            if (e["cat"] == "admin") out.push_back(e);
        return out;
    }

    fs::path path_;
    jal::emu::ChipTrace trace_;
    std::unique_ptr<AdminTrace> admin_;
    NoEvents events_;
    HostInterface host_{0, events_};
    int fn_ = -1;
    int memfd_ = -1;
    unsigned fetches_ = 0, completions_ = 0;
};

TEST_F(AdminTraceTest, ACommandIsOneSpanNamedByItsOpcodeWithItsStatus)
{
    fetch(0, JAL_ADMIN_IDENTIFY, 11);
    std::vector<std::byte> data(4096);  // IDENTIFY's data: a DMA, not a command
    ASSERT_EQ(host_.dma(fn_, kData, data.data(), data.size(), true), JAL_STATUS_OK);
    complete(0, 11, JAL_STATUS_OK);
    fetch(1, JAL_ADMIN_CREATE_QUEUE, 12);
    complete(1, 12, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(fetches_, 2u);
    EXPECT_EQ(completions_, 2u);

    const std::vector<json> s = spans();
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0]["name"], "IDENTIFY");
    EXPECT_EQ(s[0]["ph"], "X");
    EXPECT_EQ(s[0]["pid"], jal::emu::wall_pid(0));
    EXPECT_EQ(s[0]["tid"], jal::emu::kAdminTid);
    EXPECT_EQ(s[0]["args"]["function"], fn_);
    EXPECT_EQ(s[0]["args"]["cid"], 11);
    EXPECT_EQ(s[0]["args"]["status"], "ok");
    EXPECT_EQ(s[0]["args"]["result"], 7);
    EXPECT_EQ(s[1]["name"], "CREATE_QUEUE");
    EXPECT_EQ(s[1]["args"]["status"], "invalid field");
    EXPECT_GE(s[1]["ts"].get<double>(), s[0]["ts"].get<double>() + s[0]["dur"].get<double>());
}

TEST_F(AdminTraceTest, OnlyWholeEntriesOfTheEnabledRingsAreCommands)
{
    jal_admin_sqe sqe{};
    // Data the size of an entry outside the ring, and a partial entry inside it.
    ASSERT_EQ(host_.dma(fn_, kData, &sqe, sizeof sqe, false), JAL_STATUS_OK);
    ASSERT_EQ(host_.dma(fn_, kSq + 8, &sqe, sizeof sqe, false), JAL_STATUS_OK);
    ASSERT_EQ(host_.dma(fn_, kSq, &sqe, 16, false), JAL_STATUS_OK);
    ASSERT_EQ(host_.dma(fn_, kSq + kEntries * sizeof sqe, &sqe, sizeof sqe, false), JAL_STATUS_OK);
    EXPECT_EQ(fetches_, 0u);
    // A disabled queue has no rings.
    reg(JAL_REG_ADMIN_CTRL, 0);
    ASSERT_EQ(host_.dma(fn_, kSq, &sqe, sizeof sqe, false), JAL_STATUS_OK);
    EXPECT_EQ(fetches_, 0u);
    EXPECT_TRUE(spans().empty());
}

TEST_F(AdminTraceTest, ACommandNeverCompletedEndsAtTheNextFetch)
{
    fetch(0, JAL_ADMIN_GET_LOG, 1);
    fetch(1, 0x42, 2);
    complete(1, 3, JAL_STATUS_OK);  // not the command fetched: no span of its own
    complete(1, 2, JAL_STATUS_INVALID_OPCODE);
    const std::vector<json> s = spans();
    ASSERT_EQ(s.size(), 2u);
    EXPECT_EQ(s[0]["name"], "GET_LOG");
    EXPECT_EQ(s[0]["args"]["status"], "no completion");
    EXPECT_FALSE(s[0]["args"].contains("result"));
    EXPECT_EQ(s[1]["name"], "opcode 0x42");
    EXPECT_EQ(s[1]["args"]["status"], "invalid opcode");
}

}  // namespace
