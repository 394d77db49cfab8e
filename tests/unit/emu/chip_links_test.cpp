// The chip's fabric ports: the link timing model (bytes over the rate, queueing behind
// earlier transfers, parallel links sharing the load, flight latency) and the register
// block the firmware trains them through.
#include "emu/chip/chip_links.hpp"
#include "emu/chip/link_fabric.hpp"

#include "jal/hw/mgmt.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>

namespace {

using jal::emu::ChipLinks;
using jal::emu::kLinkLatencyNs;
using jal::emu::LinkPortConfig;

constexpr std::uint32_t off(std::uint32_t reg)
{
    return reg - JAL_MGMT_REG(JAL_MGMT_LINK, 0);
}

// Chip 0's view: scale-up ports 0 and 1 to chip 1, scale-out port 2 to chip 5, all up.
struct TrainedLinks : ChipLinks {
    TrainedLinks() : ChipLinks({{false, 0, 1, 0}, {false, 1, 1, 1}, {true, 2, 5, 0}})
    {
        for (unsigned i = 0; i < 3; ++i) set_up(i, true, "");
    }
};

TEST(ChipLinks, ATransferCostsBytesOverTheRatePlusFlight)
{
    TrainedLinks links;
    // 50 GB/s: 1 MB takes 20 000 ns on the wire, then 1 µs of flight for a write.
    const auto w = links.charge(5, 1'000'000, true, 1000);
    ASSERT_TRUE(w);
    EXPECT_EQ(w->index, 2u);
    EXPECT_EQ(w->start_ns, 1000u);
    EXPECT_EQ(w->end_ns, 1000u + 20'000u + kLinkLatencyNs);
    // A read's request crosses first: two flights.
    const auto r = links.charge(5, 50, false, 0);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->end_ns - r->start_ns, 1u + 2 * kLinkLatencyNs);
    // Never cheaper than the link: 1 byte still takes a whole ns.
    const auto one = links.charge(5, 1, true, 1'000'000);
    EXPECT_EQ(one->end_ns - one->start_ns, 1u + kLinkLatencyNs);
}

TEST(ChipLinks, TransfersQueueOnAPortAndShareParallelLinks)
{
    TrainedLinks links;
    const auto a = links.charge(1, 500'000, true, 0);  // 10 µs on port 0
    const auto b = links.charge(1, 500'000, true, 0);  // port 1 is free: no wait
    const auto c = links.charge(1, 500'000, true, 0);  // both busy: queues behind a
    ASSERT_TRUE(a && b && c);
    EXPECT_NE(a->index, b->index);
    EXPECT_EQ(b->start_ns, 0u);
    EXPECT_EQ(c->start_ns, 10'000u);
    // The other direction is a separate lane pair: a read does not wait for the writes.
    EXPECT_EQ(links.charge(1, 100, false, 0)->start_ns, 0u);
    const auto ports = links.ports();
    EXPECT_EQ(ports[0].tx_bytes + ports[1].tx_bytes, 1'500'000u);
    EXPECT_EQ(ports[0].rx_bytes + ports[1].rx_bytes, 100u);
}

TEST(ChipLinks, NoUpPortMeansNoRoute)
{
    TrainedLinks links;
    EXPECT_FALSE(links.charge(9, 10, true, 0));
    EXPECT_NE(links.no_route(9).find("no link"), std::string::npos);
    links.peer_lost(1, "process b died");
    EXPECT_FALSE(links.reaches(1));
    EXPECT_NE(links.no_route(1).find("process b died"), std::string::npos);
    const auto ports = links.ports();
    EXPECT_EQ(ports[0].errors + ports[1].errors, 2u);
}

TEST(ChipLinks, TheFirmwareTrainsCabledPortsWhoseFarEndIsThere)
{
    ChipLinks links({{false, 3, 1, 0}, {true, 1, 5, 2}});
    auto nobody = [](unsigned) { return false; };
    auto only_chip1 = [](unsigned chip) { return chip == 1; };
    // Register ports: scale-up 3 is port 3, scale-out 1 is port 13. Down until trained.
    EXPECT_EQ(links.fw_read(off(JAL_LINK_CONNECTED_MASK)), (1u << 3) | (1u << 13));
    EXPECT_EQ(links.fw_read(off(JAL_LINK_UP_MASK)), 0u);
    links.fw_write(off(JAL_LINK_SEL), 13, nobody);
    EXPECT_EQ(links.fw_read(off(JAL_LINK_PEER)), 5u | 2u << 16);
    links.fw_write(off(JAL_LINK_CMD), JAL_LINK_CMD_TRAIN, only_chip1);
    EXPECT_EQ(links.fw_read(off(JAL_LINK_STATUS)), JAL_LINK_ST_CONNECTED);  // chip 5 absent
    links.fw_write(off(JAL_LINK_SEL), 3, nobody);
    links.fw_write(off(JAL_LINK_CMD), JAL_LINK_CMD_TRAIN, only_chip1);
    EXPECT_EQ(links.fw_read(off(JAL_LINK_STATUS)),
              JAL_LINK_ST_CONNECTED | JAL_LINK_ST_PEER | JAL_LINK_ST_UP | JAL_LINK_LANES << 8);
    EXPECT_EQ(links.fw_read(off(JAL_LINK_UP_MASK)), 1u << 3);
    // Counters through the LO/HI latch.
    ASSERT_TRUE(links.charge(1, (std::uint64_t{1} << 32) + 7, false, 0));
    EXPECT_EQ(links.fw_read(off(JAL_LINK_RX_BYTES_LO)), 7u);
    EXPECT_EQ(links.fw_read(off(JAL_LINK_RX_BYTES_HI)), 1u);
    // An unwired port reads as nothing; DOWN and a chip reset take the port down.
    links.fw_write(off(JAL_LINK_SEL), 0, nobody);
    EXPECT_EQ(links.fw_read(off(JAL_LINK_STATUS)), 0u);
    links.fw_write(off(JAL_LINK_SEL), 3, nobody);
    links.fw_write(off(JAL_LINK_CMD), JAL_LINK_CMD_DOWN, nobody);
    EXPECT_EQ(links.fw_read(off(JAL_LINK_UP_MASK)), 0u);
    links.fw_write(off(JAL_LINK_CMD), JAL_LINK_CMD_TRAIN, only_chip1);
    links.reset();
    EXPECT_EQ(links.fw_read(off(JAL_LINK_UP_MASK)), 0u);
    EXPECT_EQ(links.ports()[0].rx_bytes, (std::uint64_t{1} << 32) + 7) << "since power-on";
}

// Lane-level training (1.8): margins from the seed, ENABLE only on locked lanes at a width
// of 4, 2 or 1, a killed lane never locking again, the rate following the width.
TEST(ChipLinks, LanesTrainFromTheSeedAndEnableNeedsLockedLanes)
{
    auto there = [](unsigned) { return true; };
    ChipLinks links({{false, 0, 1, 0}, {false, 2, 1, 2}}, 42), again({{false, 0, 1, 0}}, 42);
    auto margins = [](ChipLinks& l) {
        std::array<std::uint32_t, 4> m{};
        for (std::uint32_t lane = 0; lane < 4; ++lane) {
            l.fw_write(off(JAL_LINK_LANE_SEL), lane, [](unsigned) { return true; });
            m[lane] = l.fw_read(off(JAL_LINK_LANE_MARGIN));
        }
        return m;
    };
    links.fw_write(off(JAL_LINK_CMD), JAL_LINK_CMD_TRAIN_LANES, there);
    again.fw_write(off(JAL_LINK_CMD), JAL_LINK_CMD_TRAIN_LANES, there);
    EXPECT_EQ(margins(links), margins(again)) << "the same seed trains the same way";
    EXPECT_EQ(links.fw_read(off(JAL_LINK_LANES_OK)), 0xfu);
    EXPECT_EQ(links.fw_read(off(JAL_LINK_STATUS)), JAL_LINK_ST_CONNECTED | JAL_LINK_ST_PEER)
        << "trained, not up until ENABLE";
    links.fw_write(off(JAL_LINK_LANE_USE), 0xf, there);
    links.fw_write(off(JAL_LINK_CMD), JAL_LINK_CMD_ENABLE, there);
    EXPECT_EQ(links.ports()[0].lanes, 4u);
    EXPECT_EQ(links.ports()[0].gbytes_per_s(), 50.0);

    // Lane 2 dies: the port runs on until retrained, then it no longer locks.
    EXPECT_TRUE(links.kill_lane(0, 2));
    EXPECT_FALSE(links.kill_lane(1, 0)) << "port 1 is not cabled";
    EXPECT_FALSE(links.kill_lane(0, 4));
    EXPECT_TRUE(links.reaches(1));
    links.fw_write(off(JAL_LINK_CMD), JAL_LINK_CMD_TRAIN_LANES, there);
    EXPECT_EQ(links.fw_read(off(JAL_LINK_LANES_OK)), 0xbu);
    EXPECT_EQ(margins(links)[2], 0u);
    for (std::uint32_t use : {0xfu, 0x7u, 0xbu, 0x6u}) {  // a dead lane, or 3 lanes: refused
        links.fw_write(off(JAL_LINK_LANE_USE), use, there);
        links.fw_write(off(JAL_LINK_CMD), JAL_LINK_CMD_ENABLE, there);
        EXPECT_EQ(links.fw_read(off(JAL_LINK_UP_MASK)), 0u) << "use " << use;
    }
    links.fw_write(off(JAL_LINK_LANE_USE), 0x3, there);
    links.fw_write(off(JAL_LINK_CMD), JAL_LINK_CMD_ENABLE, there);
    EXPECT_EQ(links.fw_read(off(JAL_LINK_STATUS)) >> 8, 2u);
    EXPECT_EQ(links.ports()[0].gbytes_per_s(), 25.0);
    // 1 MB at 25 GB/s: 40 µs on the wire.
    const auto c = links.charge(1, 1'000'000, true, 0);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->end_ns, 40'000u + kLinkLatencyNs);
    EXPECT_EQ(links.fw_read(off(JAL_LINK_TRANSFERS_LO)), 1u);
    links.reset();
    links.fw_write(off(JAL_LINK_CMD), JAL_LINK_CMD_TRAIN, there);
    EXPECT_EQ(links.ports()[0].lanes, 3u) << "1.7's TRAIN: up on every lane that locks";
    EXPECT_EQ(links.fw_read(off(JAL_LINK_LANES_OK)), 0xbu) << "a dead lane stays dead";
    // A far end that does not answer: no PEER, nothing locks.
    links.fw_write(off(JAL_LINK_CMD), JAL_LINK_CMD_TRAIN_LANES, [](unsigned) { return false; });
    EXPECT_EQ(links.fw_read(off(JAL_LINK_STATUS)), JAL_LINK_ST_CONNECTED);
    EXPECT_EQ(links.fw_read(off(JAL_LINK_LANES_OK)), 0u);
}

TEST(ChipLinks, SomeLanesLockShortOfMarginAtFirstAndWellWhenRetrained)
{
    auto there = [](unsigned) { return true; };
    unsigned marginal = 0, lanes = 0;
    for (std::uint64_t seed = 1; seed <= 40; ++seed) {
        ChipLinks links({{false, 0, 1, 0}}, seed);
        for (int attempt = 0; attempt < 2; ++attempt) {
            links.fw_write(off(JAL_LINK_CMD), JAL_LINK_CMD_TRAIN_LANES, there);
            for (std::uint32_t lane = 0; lane < 4; ++lane) {
                links.fw_write(off(JAL_LINK_LANE_SEL), lane, there);
                const std::uint32_t m = links.fw_read(off(JAL_LINK_LANE_MARGIN));
                EXPECT_GT(m, 0u);
                if (attempt == 1) {
                    EXPECT_GE(m, JAL_LINK_MARGIN_MIN_MUI) << "seed " << seed;
                } else {
                    ++lanes;
                    marginal += m < JAL_LINK_MARGIN_MIN_MUI;
                }
            }
        }
    }
    // One lane in 16 on average: 160 lanes give some, never most.
    EXPECT_GT(marginal, 0u);
    EXPECT_LT(marginal, lanes / 4);
}

}  // namespace

namespace {

using jal::emu::kScaleOutSwitchedLatencyNs;
using jal::emu::LinkFabric;
using jal::emu::SwitchLayout;

// `chips` chips of one process, each with 12 switched scale-up ports (and, with
// `scale_out`, 4 switched scale-out ports), all trained through the firmware's TRAIN.
struct Tray {
    explicit Tray(unsigned chips, unsigned rack = 128, bool scale_out = false)
        : fabric(SwitchLayout{true, scale_out, rack, chips})
    {
        std::vector<LinkPortConfig> ports;
        for (unsigned p = 0; p < 12; ++p) ports.push_back({false, p, 0, 0, true});
        if (scale_out)
            for (unsigned p = 0; p < 4; ++p) ports.push_back({true, p, 0, 0, true});
        auto nobody = [](unsigned) { return false; };
        for (unsigned c = 0; c < chips; ++c) {
            links.push_back(std::make_unique<ChipLinks>(ports));
            links.back()->attach_fabric(&fabric, c);
            fabric.attach(c, links.back().get());
            for (unsigned p = 0; p < ports.size(); ++p) {
                links.back()->fw_write(off(JAL_LINK_SEL), p, nobody);
                links.back()->fw_write(off(JAL_LINK_CMD), JAL_LINK_CMD_TRAIN, nobody);
            }
        }
    }
    ChipLinks& operator[](unsigned c) { return *links[c]; }
    LinkFabric fabric;
    std::vector<std::unique_ptr<ChipLinks>> links;
};

TEST(ChipLinks, SwitchedPortsTrainWithoutAPeerAndSayTheyAreSwitched)
{
    Tray tray(2);
    // The switch answers: every plane is up although no peer was asked.
    EXPECT_EQ(tray[0].fw_read(off(JAL_LINK_UP_MASK)), 0xfffu);
    tray[0].fw_write(off(JAL_LINK_SEL), 5, [](unsigned) { return false; });
    // PEER: the far end of a switched port, its plane's switch, answered the training.
    EXPECT_EQ(tray[0].fw_read(off(JAL_LINK_STATUS)), JAL_LINK_ST_CONNECTED | JAL_LINK_ST_SWITCHED |
                                                         JAL_LINK_ST_PEER | JAL_LINK_ST_UP |
                                                         JAL_LINK_LANES << 8);
    EXPECT_EQ(tray[0].fw_read(off(JAL_LINK_PEER)), JAL_LINK_PEER_SWITCH | 5u << 16);
    EXPECT_TRUE(tray[0].reaches(1));
    EXPECT_FALSE(tray[0].reaches(0)) << "itself";
    EXPECT_FALSE(tray[0].reaches(2)) << "no such chip";
    EXPECT_NE(tray[0].no_route(2).find("does not answer"), std::string::npos);
}

TEST(ChipLinks, ATransferIsStripedOverEveryPlaneAndChargedAtBothEnds)
{
    Tray tray(8);
    // 1.2 MB over 12 planes of 50 GB/s: 100 000 B a plane, 2 000 ns, then 1 µs of flight.
    const auto c = tray[0].charge(7, 1'200'000, true, 500);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->ports, 12u);
    EXPECT_EQ(c->start_ns, 500u);
    EXPECT_EQ(c->end_ns, 500u + 2'000u + kLinkLatencyNs);
    // Never cheaper than the chip's 600 GB/s.
    EXPECT_GE(c->end_ns - c->start_ns, 1'200'000u / 600u);
    std::uint64_t tx = 0, rx = 0;
    for (const auto& p : tray[0].ports()) tx += p.tx_bytes;
    for (const auto& p : tray[7].ports()) rx += p.rx_bytes;
    EXPECT_EQ(tx, 1'200'000u);
    EXPECT_EQ(rx, 1'200'000u) << "the receiver's side is charged too";
    // A read: data from chip 7's transmit to chip 0's receive, request and data in flight.
    const auto r = tray[0].charge(7, 12, false, 10'000);
    EXPECT_EQ(r->end_ns, 10'000u + 1u + 2 * kLinkLatencyNs);
}

TEST(ChipLinks, TwoSendersToOneChipShareItsReceivePorts)
{
    Tray tray(3);
    const std::uint64_t bytes = 6'000'000;  // 10 µs at 600 GB/s
    const auto alone = tray[1].charge(0, bytes, true, 0);
    Tray again(3);
    const auto a = again[1].charge(0, bytes, true, 0);
    const auto b = again[2].charge(0, bytes, true, 0);
    ASSERT_TRUE(alone && a && b);
    const std::uint64_t single = alone->end_ns - kLinkLatencyNs;
    EXPECT_EQ(single, 10'000u);
    // Chip 0's receive directions carry both: the second waits for the first.
    EXPECT_GE(std::max(a->end_ns, b->end_ns) - kLinkLatencyNs, 2 * single);
    // Sends from one chip to two others do not wait on each other's receivers, only on the
    // sender's transmit directions.
    Tray fan(3);
    const auto x = fan[0].charge(1, bytes, true, 0);
    const auto y = fan[0].charge(2, bytes, true, 0);
    EXPECT_EQ(y->start_ns, x->end_ns - kLinkLatencyNs);
}

TEST(ChipLinks, APlaneDownAtEitherEndIsLeftOut)
{
    Tray tray(2);
    ASSERT_TRUE(tray[0].set_up(3, false, "taken down"));
    ASSERT_TRUE(tray[1].set_up(4, false, "taken down"));
    const auto c = tray[0].charge(1, 1000, true, 0);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->ports, 10u);
    EXPECT_EQ(tray[0].ports()[3].tx_bytes, 0u);
    for (unsigned p = 0; p < 12; ++p) tray[0].set_up(p, false, "all down");
    EXPECT_FALSE(tray[0].reaches(1));
    EXPECT_FALSE(tray[0].charge(1, 10, true, 0));
    EXPECT_NE(tray[0].no_route(1).find("every switch plane to chip 1 is down"), std::string::npos);
}

TEST(ChipLinks, OtherRacksAreReachedOverTheScaleOutPlanes)
{
    Tray tray(4, 2, true);  // racks {0, 1} and {2, 3}
    const auto in_rack = tray[0].charge(1, 1200, true, 0);
    ASSERT_TRUE(in_rack);
    EXPECT_EQ(in_rack->ports, 12u);
    const auto across = tray[0].charge(2, 1200, true, 0);
    ASSERT_TRUE(across);
    EXPECT_EQ(across->ports, 4u);
    EXPECT_EQ(across->end_ns, 6u + kScaleOutSwitchedLatencyNs);  // 300 B a plane: 6 ns
    EXPECT_TRUE(tray[0].ports()[12].config.scale_out);
    EXPECT_EQ(tray[0].ports()[12].tx_bytes, 300u);
}

}  // namespace
