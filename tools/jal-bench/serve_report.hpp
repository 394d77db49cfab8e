// The output of `jal-bench serve`, the same for both targets: one JSON document (the
// workload, the target, a point per concurrency) or a table, and the Pareto plot's points.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve_stats.hpp"
#include "svg_plot.hpp"

namespace jal::bench {

nlohmann::json point_json(const PointFigures& f);
// A table of the document's points (latencies in ms, in the target's time base).
std::string serve_table(const nlohmann::json& doc);
// Mixed tok/s per kW rated against tok/s per user, a point per concurrency.
std::string serve_plot(const nlohmann::json& doc);

}  // namespace jal::bench
