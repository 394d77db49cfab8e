// `jal-bench serve`'s arithmetic (percentiles, per-point figures), its workload and its SVG
// writer, against hand-computed values.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "serve_stats.hpp"
#include "serve_workload.hpp"
#include "svg_plot.hpp"

namespace {

using namespace jal::bench;

TEST(ServeStats, PercentileInterpolatesBetweenRanks)
{
    // numpy.percentile([1, 2, 3, 4], p): rank p/100 × 3.
    const std::vector<double> v = {4, 1, 3, 2};
    EXPECT_DOUBLE_EQ(percentile(v, 0), 1);
    EXPECT_DOUBLE_EQ(percentile(v, 50), 2.5);
    EXPECT_DOUBLE_EQ(percentile(v, 90), 3.7);
    EXPECT_DOUBLE_EQ(percentile(v, 99), 3.97);
    EXPECT_DOUBLE_EQ(percentile(v, 100), 4);
    EXPECT_DOUBLE_EQ(percentile({5}, 99), 5);
    EXPECT_DOUBLE_EQ(percentile({}, 50), 0);
}

TEST(ServeStats, DistributionScales)
{
    const Distribution d = distribution({0.1, 0.2}, 1000);
    EXPECT_DOUBLE_EQ(d.mean, 150);
    EXPECT_DOUBLE_EQ(d.median, 150);
    EXPECT_DOUBLE_EQ(d.p90, 190);
    EXPECT_DOUBLE_EQ(d.p99, 199);
}

TEST(ServeStats, PointFiguresFromRequests)
{
    RequestTiming a{10, 5, 0, 0.1, 0.5, {0.1, 0.1, 0.1, 0.1}, ""};
    RequestTiming b{20, 3, 0, 0.2, 0.6, {0.3, 0.1}, ""};
    RequestTiming failed{7, 0, 0, 0, 0, {}, "HTTP 500"};
    const PointFigures f = compute_point(4, {a, b, failed}, 1.0, ChipUse{0.5, 100, true});
    EXPECT_EQ(f.concurrency, 4u);
    EXPECT_EQ(f.completed, 2u);
    EXPECT_EQ(f.failed, 1u);
    EXPECT_EQ(f.input_tokens, 30u);
    EXPECT_EQ(f.output_tokens, 8u);
    EXPECT_DOUBLE_EQ(tpot_s(a), 0.1);  // (0.5 − 0.1) / 4
    EXPECT_DOUBLE_EQ(tpot_s(b), 0.2);  // (0.6 − 0.2) / 2
    EXPECT_DOUBLE_EQ(f.tpot_ms.mean, 150);
    EXPECT_DOUBLE_EQ(f.ttft_ms.p90, 190);
    EXPECT_DOUBLE_EQ(f.e2e_ms.mean, 550);
    EXPECT_DOUBLE_EQ(f.itl_ms.median, 100);  // {0.1 × 5, 0.3}
    EXPECT_DOUBLE_EQ(f.itl_ms.mean, 800.0 / 6);
    EXPECT_DOUBLE_EQ(f.request_s, 2);
    EXPECT_DOUBLE_EQ(f.output_tok_s, 8);
    EXPECT_DOUBLE_EQ(f.mixed_tok_s, 38);
    EXPECT_DOUBLE_EQ(f.tok_s_user, 1000.0 / 150);
    EXPECT_DOUBLE_EQ(f.mixed_tok_s_per_kw_rated, 38 / 0.7);
    EXPECT_DOUBLE_EQ(f.avg_power_w, 200);  // 100 J over 0.5 s
    EXPECT_DOUBLE_EQ(f.mixed_tok_s_per_kw_modelled, 190);
    EXPECT_DOUBLE_EQ(f.chip_mixed_tok_s, 76);  // 38 tokens over 0.5 modelled s
    EXPECT_DOUBLE_EQ(f.chip_mixed_tok_s_per_kw_rated, 76 / 0.7);
    EXPECT_DOUBLE_EQ(f.chip_mixed_tok_s_per_kw_modelled, 380);
}

TEST(ServeStats, UnknownChipLeavesModelledFiguresZero)
{
    RequestTiming one{4, 1, 0, 0.1, 0.1, {}, ""};
    const PointFigures f = compute_point(1, {one}, 2.0, ChipUse{});
    EXPECT_EQ(f.tpot_ms.mean, 0);  // a single output token has no TPOT
    EXPECT_EQ(f.tok_s_user, 0);
    EXPECT_DOUBLE_EQ(f.mixed_tok_s, 2.5);
    EXPECT_EQ(f.avg_power_w, 0);
    EXPECT_EQ(f.mixed_tok_s_per_kw_modelled, 0);
}

TEST(ServeWorkload, LengthsInRangeIdsInVocabularyReproducible)
{
    WorkloadSpec w{100, 10, 0.5, 7, 42};
    const std::vector<BenchRequest> r = make_workload(w, 50);
    ASSERT_EQ(r.size(), 50u);
    for (const BenchRequest& q : r) {
        EXPECT_GE(q.prompt.size(), 50u);
        EXPECT_LE(q.prompt.size(), 100u);
        EXPECT_GE(q.output_len, 5u);
        EXPECT_LE(q.output_len, 10u);
        for (int32_t id : q.prompt) EXPECT_TRUE(id >= 0 && id < 7) << id;
    }
    const std::vector<BenchRequest> again = make_workload(w, 50);
    for (size_t i = 0; i < r.size(); i++) EXPECT_EQ(r[i].prompt, again[i].prompt);
    w.range_ratio = 1;
    for (const BenchRequest& q : make_workload(w, 5)) {
        EXPECT_EQ(q.prompt.size(), 100u);
        EXPECT_EQ(q.output_len, 10u);
    }
}

TEST(SvgPlot, NiceCeiling)
{
    EXPECT_DOUBLE_EQ(nice_ceiling(0), 1);
    EXPECT_DOUBLE_EQ(nice_ceiling(1), 1);
    EXPECT_DOUBLE_EQ(nice_ceiling(3), 5);
    EXPECT_DOUBLE_EQ(nice_ceiling(7), 10);
    EXPECT_DOUBLE_EQ(nice_ceiling(120), 200);
    EXPECT_DOUBLE_EQ(nice_ceiling(31749), 50000);
}

TEST(SvgPlot, ParetoFrontDropsBeatenPoints)
{
    const std::vector<PlotPoint> p = {{1, 5, "a"}, {2, 4, "b"}, {1.5, 3, "c"}, {3, 1, "d"}};
    EXPECT_EQ(pareto_front(p), (std::vector<size_t>{0, 1, 3}));
}

TEST(SvgPlot, PointsAtHandComputedPixels)
{
    // The default frame: x 80..610, y 360 (0) up to 40 (max); axes to 10 and 100.
    PlotSpec spec;
    spec.title = "t";
    const std::string svg = scatter_svg(spec, {{10, 50, "C<2"}, {5, 100, "C=1"}});
    EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\"", 0), 0u);
    EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
    EXPECT_NE(svg.find(R"(<circle cx="610.0" cy="200.0" r="4")"), std::string::npos) << svg;
    EXPECT_NE(svg.find(R"(<circle cx="345.0" cy="40.0" r="4")"), std::string::npos) << svg;
    EXPECT_NE(svg.find(R"(<polyline points="345.0,40.0 610.0,200.0")"), std::string::npos);
    EXPECT_NE(svg.find(">C&lt;2</text>"), std::string::npos);
    EXPECT_EQ(svg.find("C<2"), std::string::npos);
}

}  // namespace
