#include "svg_plot.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace jal::bench {

double nice_ceiling(double v)
{
    if (!(v > 0)) return 1;
    const double p = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * p >= v * (1 - 1e-12)) return m * p;
    return 10 * p;
}

std::vector<size_t> pareto_front(const std::vector<PlotPoint>& points)
{
    std::vector<size_t> front;
    for (size_t i = 0; i < points.size(); i++) {
        bool beaten = false;
        for (size_t j = 0; j < points.size() && !beaten; j++)
            beaten = j != i && points[j].x >= points[i].x && points[j].y >= points[i].y &&
                     (points[j].x > points[i].x || points[j].y > points[i].y);
        if (!beaten) front.push_back(i);
    }
    std::sort(front.begin(), front.end(),
              [&](size_t a, size_t b) { return points[a].x < points[b].x; });
    return front;
}

namespace {

std::string escape(const std::string& s)
{
    std::string out;
    for (char c : s) {
        if (c == '<')
            out += "&lt;";
        else if (c == '>')
            out += "&gt;";
        else if (c == '&')
            out += "&amp;";
        else
            out += c;
    }
    return out;
}

// Data to pixels: the plot area's corners are (0, 0) and (x_max, y_max).
struct Frame {
    const PlotSpec& s;
    double x_max, y_max;
    double left() const { return s.margin_left; }
    double right() const { return s.width - s.margin_right; }
    double top() const { return s.margin_top; }
    double bottom() const { return s.height - s.margin_bottom; }
    double px(double x) const { return left() + (right() - left()) * x / x_max; }
    double py(double y) const { return bottom() - (bottom() - top()) * y / y_max; }
};

void axes(std::string& out, const Frame& f)
{
    out += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#444"/>)"
                       "\n",
                       f.left(), f.top(), f.right() - f.left(), f.bottom() - f.top());
    for (int i = 0; i <= 5; i++) {
        const double x = f.x_max * i / 5, y = f.y_max * i / 5;
        out += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{:g}</text>)"
                           "\n",
                           f.px(x), f.bottom() + 16, x);
        out += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">{:g}</text>)"
                           "\n",
                           f.left() - 6, f.py(y) + 4, y);
    }
    out += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{}</text>)"
                       "\n",
                       (f.left() + f.right()) / 2, f.s.height - 18, escape(f.s.x_label));
    out += fmt::format(R"svg(<text transform="translate(18,{}) rotate(-90)" )svg"
                       R"svg(text-anchor="middle">{}</text>)svg"
                       "\n",
                       (f.top() + f.bottom()) / 2, escape(f.s.y_label));
    out += fmt::format(R"(<text x="{}" y="24" text-anchor="middle" font-weight="bold">{}</text>)"
                       "\n",
                       f.s.width / 2, escape(f.s.title));
}

}  // namespace

std::string scatter_svg(const PlotSpec& spec, const std::vector<PlotPoint>& points)
{
    double x_max = 0, y_max = 0;
    for (const PlotPoint& p : points) x_max = std::max(x_max, p.x), y_max = std::max(y_max, p.y);
    const Frame f{spec, nice_ceiling(x_max), nice_ceiling(y_max)};
    std::string out =
        fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" )"
                    R"(font-family="sans-serif" font-size="12">)"
                    "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
                    spec.width, spec.height);
    axes(out, f);
    std::string line;
    for (size_t i : pareto_front(points))
        line += fmt::format("{}{:.1f},{:.1f}", line.empty() ? "" : " ", f.px(points[i].x),
                            f.py(points[i].y));
    if (!line.empty())
        out += fmt::format(R"(<polyline points="{}" fill="none" stroke="#1f77b4"/>)"
                           "\n",
                           line);
    for (const PlotPoint& p : points)
        out += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="4" fill="#1f77b4"/>)"
                           R"(<text x="{:.1f}" y="{:.1f}">{}</text>)"
                           "\n",
                           f.px(p.x), f.py(p.y), f.px(p.x) + 6, f.py(p.y) - 6, escape(p.label));
    return out + "</svg>\n";
}

}  // namespace jal::bench
