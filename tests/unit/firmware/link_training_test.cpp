// Lane-level link training against a fake link PHY: a port comes up at full width, after
// one retrain when a lane first lacks margin, at a degraded width around a bad lane, or
// stays down with the reason; each outcome is one event; GET_LINK_REPORT shows it.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstring>

#include "fake_bus.hpp"
#include "firmware/host/admin_commands.hpp"
#include "firmware/links/link_manager.hpp"
#include "jal/hw/events.h"
#include "jal/hw/status.h"

using namespace jal::fw;

namespace {

// The LINK block: per port and lane a margin for the first training and for every later
// one (0: the lane does not lock), a far end that answers or not.
struct FakeLinkPhy {
    std::uint32_t connected = 0, peer_there = 0;
    std::array<std::array<std::uint16_t, 4>, JAL_LINK_PORTS> first{}, later{};
    struct Port {
        bool up = false, answered = false;
        std::uint32_t lanes = 0, ok = 0, trainings = 0;
        std::array<std::uint16_t, 4> margin{};
    };
    std::array<Port, JAL_LINK_PORTS> ports{};
    std::uint32_t sel = 0, lane_sel = 0, use = 0;

    void cable(std::uint32_t port, std::uint16_t margin = 300)
    {
        connected |= 1u << port;
        peer_there |= 1u << port;
        first[port].fill(margin);
        later[port].fill(margin);
    }

    bool read(std::uint32_t addr, std::uint32_t& v) const
    {
        if (addr < JAL_MGMT_REG(JAL_MGMT_LINK, 0) || addr >= JAL_MGMT_REG(JAL_MGMT_LINK, 0x100))
            return false;
        const Port& p = ports[sel];
        std::uint32_t up_mask = 0;
        for (std::uint32_t i = 0; i < JAL_LINK_PORTS; ++i) up_mask |= ports[i].up ? 1u << i : 0;
        switch (addr) {
        case JAL_LINK_STATUS:
            v = (connected >> sel) & 1
                    ? JAL_LINK_ST_CONNECTED | (p.answered ? JAL_LINK_ST_PEER : 0) |
                          (p.up ? JAL_LINK_ST_UP | p.lanes << 8 : 0)
                    : 0;
            break;
        case JAL_LINK_PEER:
            v = 7 | sel << 16;
            break;
        case JAL_LINK_LANES_OK:
            v = p.ok;
            break;
        case JAL_LINK_LANE_MARGIN:
            v = p.margin[lane_sel];
            break;
        case JAL_LINK_UP_MASK:
            v = up_mask;
            break;
        case JAL_LINK_CONNECTED_MASK:
            v = connected;
            break;
        case JAL_LINK_SELF:
            v = 3;
            break;
        case JAL_LINK_ERRORS:
            v = 5;
            break;
        case JAL_LINK_TX_BYTES_LO:
            v = 1000;
            break;
        default:
            v = 0;
        }
        return true;
    }

    void write(std::uint32_t addr, std::uint32_t v)
    {
        if (addr == JAL_LINK_SEL) sel = v;
        if (addr == JAL_LINK_LANE_SEL) lane_sel = v;
        if (addr == JAL_LINK_LANE_USE) use = v;
        if (addr != JAL_LINK_CMD) return;
        Port& p = ports[sel];
        if (v == JAL_LINK_CMD_TRAIN_LANES) {
            p.up = false;
            p.answered = (peer_there >> sel) & 1;
            p.margin = p.answered ? (p.trainings++ ? later[sel] : first[sel])
                                  : std::array<std::uint16_t, 4>{};
            p.ok = 0;
            for (std::uint32_t l = 0; l < 4; ++l) p.ok |= p.margin[l] ? 1u << l : 0;
        } else if (v == JAL_LINK_CMD_ENABLE) {
            const auto n = static_cast<std::uint32_t>(std::popcount(use));
            p.up = p.answered && (use & ~p.ok) == 0 && (n == 4 || n == 2 || n == 1);
            p.lanes = p.up ? n : 0;
        } else if (v == JAL_LINK_CMD_DOWN) {
            p.up = false;
        }
    }
};

struct LinkTrainingTest : ::testing::Test {
    fake::FakeBus bus;
    FakeLinkPhy phy;
    host::EventLog log;
    host::Journal journal{log};
    links::LinkManager links{journal};

    void SetUp() override
    {
        bus.log_writes = false;
        bus.read_hook = [this](std::uint32_t a, std::uint32_t& v) { return phy.read(a, v); };
        bus.write_hook = [this](std::uint32_t a, std::uint32_t v) { phy.write(a, v); };
    }

    std::vector<jal_log_event> link_events() const
    {
        std::vector<jal_log_event> out;
        for (std::uint32_t s = log.oldest_seq(); s < log.next_seq(); ++s)
            if (log.at(s).source == JAL_SRC_LINK) out.push_back(log.at(s));
        return out;
    }

    void ticks(std::uint32_t n)
    {
        for (std::uint32_t i = 0; i < n; ++i) links.tick();
    }
};

TEST_F(LinkTrainingTest, GoodPortComesUpAtFullWidth)
{
    phy.cable(0, 300);
    phy.first[0][2] = 280;
    links.train_all();
    EXPECT_EQ(links.up(), 1u);
    EXPECT_EQ(links.port(0).lanes, 4u);
    EXPECT_EQ(links.port(0).reason, JAL_LINK_DOWN_NONE);
    EXPECT_EQ(links.port(0).retrains, 0u);
    const auto ev = link_events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].code, JAL_EVENT_LINK_UP);
    EXPECT_EQ(ev[0].args[0], 0u);    // port
    EXPECT_EQ(ev[0].args[1], 4u);    // lanes
    EXPECT_EQ(ev[0].args[2], 280u);  // the smallest margin
    // The console line names its source and decodes the arguments, as jalctl log does.
    bool found = false;
    for (const auto& line : bus.console_lines())
        found = found || line.find("link: info: link up port=0 lanes=4") != std::string::npos;
    EXPECT_TRUE(found) << "no decoded link up line";
}

TEST_F(LinkTrainingTest, LaneShortOfMarginIsRetrainedOnce)
{
    phy.cable(3, 300);
    phy.first[3][1] = 90;  // locked, but below JAL_LINK_MARGIN_MIN_MUI
    links.train_all();
    EXPECT_EQ(links.port(3).lanes, 4u);
    EXPECT_EQ(links.port(3).trainings, 2u);
    EXPECT_EQ(links.port(3).retrains, 1u);
    EXPECT_EQ(phy.ports[3].trainings, 2u);
}

TEST_F(LinkTrainingTest, BadLaneDegradesThePortToTwoLanes)
{
    phy.cable(12, 300);  // a scale-out port
    phy.first[12][1] = phy.later[12][1] = 0;
    links.train_all();
    EXPECT_EQ(links.port(12).lanes, 2u);
    EXPECT_EQ(links.port(12).lanes_ok, 0xdu);
    EXPECT_EQ(links.port(12).reason, JAL_LINK_DOWN_BAD_LANES);
    EXPECT_EQ(phy.use, 0x5u);  // the two lowest good lanes
    EXPECT_EQ(links.degraded_count(), 1u);
    const auto ev = link_events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].code, JAL_EVENT_LINK_DEGRADED);
    EXPECT_EQ(ev[0].args[0], 12u);
    EXPECT_EQ(ev[0].args[1], 2u);
    EXPECT_EQ(ev[0].args[2], 0xdu);
    EXPECT_EQ(ev[0].args[3], static_cast<std::uint32_t>(JAL_LINK_DOWN_BAD_LANES));
}

TEST_F(LinkTrainingTest, OneGoodLaneRunsAtWidthOne)
{
    phy.cable(5, 300);
    phy.first[5] = phy.later[5] = {0, 0, 100, 250};
    links.train_all();
    EXPECT_EQ(links.port(5).lanes, 1u);
    EXPECT_EQ(phy.use, 0x8u);
}

TEST_F(LinkTrainingTest, NoLaneLocksLeavesThePortDown)
{
    phy.cable(2, 0);
    links.train_all();
    EXPECT_EQ(links.up(), 0u);
    EXPECT_EQ(links.port(2).reason, JAL_LINK_DOWN_NO_LANES);
    const auto ev = link_events();
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].code, JAL_EVENT_LINK_DOWN);
    EXPECT_EQ(ev[0].args[1], static_cast<std::uint32_t>(JAL_LINK_DOWN_NO_LANES));
}

TEST_F(LinkTrainingTest, MissingPeerIsLoggedOnceAndComesUpWhenItAnswers)
{
    phy.cable(1, 300);
    phy.peer_there = 0;
    links.train_all();
    EXPECT_EQ(links.port(1).reason, JAL_LINK_DOWN_NO_PEER);
    ticks(3 * links::LinkManager::kRetrainTicks);
    EXPECT_EQ(link_events().size(), 1u);  // waiting is not news
    EXPECT_EQ(links.port(1).retrains, 0u);
    phy.peer_there = 1u << 1;
    ticks(links::LinkManager::kRetrainTicks);
    EXPECT_EQ(links.port(1).lanes, 4u);
    const auto ev = link_events();
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[1].code, JAL_EVENT_LINK_UP);
}

TEST_F(LinkTrainingTest, PortLostInServiceIsLoggedAndRetrained)
{
    phy.cable(4, 300);
    links.train_all();
    phy.ports[4].up = false;  // its peer was lost
    phy.peer_there = 0;
    ticks(links::LinkManager::kRetrainTicks);
    auto ev = link_events();
    ASSERT_GE(ev.size(), 2u);
    EXPECT_EQ(ev[1].code, JAL_EVENT_LINK_DOWN);
    EXPECT_EQ(ev[1].args[1], static_cast<std::uint32_t>(JAL_LINK_DOWN_LOST));
    EXPECT_EQ(links.port(4).retrains, 1u);
}

TEST_F(LinkTrainingTest, RetrainAfterALaneDiesDegradesThePort)
{
    phy.cable(0, 300);
    links.train_all();
    phy.later[0][3] = 0;
    EXPECT_TRUE(links.retrain(0));
    EXPECT_EQ(links.port(0).lanes, 2u);
    EXPECT_FALSE(links.retrain(9));  // not cabled
    EXPECT_EQ(link_events().back().code, JAL_EVENT_LINK_DEGRADED);
}

// GET_LINK_REPORT through the admin command layer (replies DMA into host function 0).
struct LinkReportTest : LinkTrainingTest {
    boot::PostTrail post;
    host::ChipInfo chip;
    slices::SliceManager slices;
    hbm::HbmState hbm;
    power::PowerManager power{slices, journal};
    host::AdminCommands commands{host::AdminDeps{chip, slices, hbm, power, log, post}, nullptr,
                                 nullptr, &links};
    static constexpr std::uint64_t kData = 0x120000;

    void SetUp() override
    {
        LinkTrainingTest::SetUp();
        bus.attach(0);
    }
    host::Completion report(std::uint32_t first, std::uint32_t count, std::uint32_t len = 4096)
    {
        jal_admin_sqe s{};
        s.opcode = JAL_ADMIN_GET_LINK_REPORT;
        s.data_addr = kData;
        s.data_len = len;
        s.cdw[0] = first;
        s.cdw[1] = count;
        return commands.execute(0, s);
    }
};

TEST_F(LinkReportTest, ReportsEachPortsTrainingAndCounters)
{
    phy.cable(0, 300);
    phy.cable(12, 300);
    phy.first[12][1] = phy.later[12][1] = 0;
    links.train_all();
    const auto c = report(0, JAL_LINK_PORTS);
    ASSERT_EQ(c.status, JAL_STATUS_OK);
    EXPECT_EQ(c.result, 32u + 64 * JAL_LINK_PORTS);
    jal_link_report_header h;
    std::memcpy(&h, bus.host_ptr(0, kData), sizeof h);
    EXPECT_EQ(h.self_chip, 3u);
    EXPECT_EQ(h.ports_cabled, 2u);
    EXPECT_EQ(h.ports_up, 2u);
    EXPECT_EQ(h.ports_degraded, 1u);
    jal_link_port_report p0, p1, p12;
    std::memcpy(&p0, bus.host_ptr(0, kData + 32), sizeof p0);
    std::memcpy(&p1, bus.host_ptr(0, kData + 32 + 64), sizeof p1);
    std::memcpy(&p12, bus.host_ptr(0, kData + 32 + 64 * 12), sizeof p12);
    EXPECT_EQ(p0.state, JAL_LINK_PORT_UP);
    EXPECT_EQ(p0.kind, JAL_LINK_KIND_SCALE_UP);
    EXPECT_EQ(p0.lanes, 4u);
    EXPECT_EQ(p0.mbytes_per_s, 50000u);
    EXPECT_EQ(p0.peer_chip, 7u);
    EXPECT_EQ(p0.margin_mui[2], 300u);
    EXPECT_EQ(p0.errors, 5u);
    EXPECT_EQ(p0.tx_bytes, 1000u);
    EXPECT_EQ(p1.state, JAL_LINK_PORT_NOT_CABLED);
    EXPECT_EQ(p12.state, JAL_LINK_PORT_DEGRADED);
    EXPECT_EQ(p12.kind, JAL_LINK_KIND_SCALE_OUT);
    EXPECT_EQ(p12.lanes, 2u);
    EXPECT_EQ(p12.mbytes_per_s, 25000u);
    EXPECT_EQ(p12.peer_port, 12u);
    EXPECT_EQ(p12.reason, JAL_LINK_DOWN_BAD_LANES);
    EXPECT_EQ(p12.lanes_ok_mask, 0xdu);
    EXPECT_EQ(p12.margin_mui[1], 0u);
}

TEST_F(LinkReportTest, BadArgumentsAreInvalidField)
{
    EXPECT_EQ(report(JAL_LINK_PORTS, 1).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(report(0, 0).status, JAL_STATUS_INVALID_FIELD);
    jal_admin_sqe s{};
    s.opcode = JAL_ADMIN_GET_LINK_REPORT;
    s.data_addr = kData;
    s.data_len = 4096;
    s.cdw[1] = 1;
    s.cdw[2] = 1;
    EXPECT_EQ(commands.execute(0, s).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(report(0, 1, 16).status, JAL_STATUS_INVALID_LENGTH);  // not even the header
    // Ports past the last are left out; so are those the buffer cannot hold.
    EXPECT_EQ(report(14, 5).result, 32u + 64 * 2);
    EXPECT_EQ(report(0, 16, 32 + 64 * 3 + 10).result, 32u + 64 * 3);
}

TEST_F(LinkReportTest, WithoutALinkManagerTheCommandIsUnsupported)
{
    host::AdminCommands bare{host::AdminDeps{chip, slices, hbm, power, log, post}};
    jal_admin_sqe s{};
    s.opcode = JAL_ADMIN_GET_LINK_REPORT;
    s.data_addr = kData;
    s.data_len = 4096;
    s.cdw[1] = 1;
    EXPECT_EQ(bare.execute(0, s).status, JAL_STATUS_UNSUPPORTED);
}

}  // namespace
