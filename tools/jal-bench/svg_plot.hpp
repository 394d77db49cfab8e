// A small scatter plot as SVG text, for `jal-bench serve --plot`: one labelled point per
// concurrency, the Pareto front (no other point is better on both axes) joined by a line.
// Self-written so the tool needs no plotting library.
#pragma once

#include <string>
#include <vector>

namespace jal::bench {

struct PlotPoint {
    double x = 0, y = 0;
    std::string label;  // drawn beside the point ("C=4")
};

struct PlotSpec {
    std::string title, x_label, y_label;
    double width = 640, height = 420;
    double margin_left = 80, margin_right = 30, margin_top = 40, margin_bottom = 60;
};

// The smallest "nice" value (1, 2 or 5 times a power of ten) at or above v; 1 for v <= 0.
double nice_ceiling(double v);

// The indices of the points no other point beats on both x and y (larger is better on
// both), in increasing x.
std::vector<size_t> pareto_front(const std::vector<PlotPoint>& points);

// The document: axes from 0 to nice_ceiling of the largest x and y, 5 ticks each.
std::string scatter_svg(const PlotSpec& spec, const std::vector<PlotPoint>& points);

}  // namespace jal::bench
