#include "tools/common/trace_merge.hpp"

#include <fstream>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace jal::tools {

namespace {

using nlohmann::json;

json read_trace(const std::string& path)
{
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read the trace " + path);
    json t = json::parse(in, nullptr, false);
    if (t.is_discarded() || !t.is_array())
        throw std::runtime_error("the trace " + path +
                                 " is not complete JSON (was its writer killed?)");
    return t;
}

bool is_origin(const json& e)
{
    return e.value("name", "") == "clock origin" && e.value("cat", "") == "clock";
}

double origin_us(const json& trace, const std::string& path)
{
    for (const json& e : trace)
        if (is_origin(e)) return e["args"]["monotonic_us"].get<double>();
    throw std::runtime_error("the trace " + path + " has no \"clock origin\" event");
}

}  // namespace

void merge_host_trace(const std::string& device_path, const std::string& host_path)
{
    json device = read_trace(device_path);
    const json host = read_trace(host_path);
    const double shift = origin_us(host, host_path) - origin_us(device, device_path);
    std::set<long long> device_pids;
    for (const json& e : device)
        if (e.contains("pid")) device_pids.insert(e["pid"].get<long long>());
    for (json e : host) {
        if (is_origin(e)) continue;
        if (e.contains("ts")) e["ts"] = e["ts"].get<double>() + shift;
        // A host pid equal to one of jal-emu's small process ids would merge the tracks.
        if (e.contains("pid") && device_pids.count(e["pid"].get<long long>()))
            e["pid"] = e["pid"].get<long long>() + 1000000;
        device.push_back(std::move(e));
    }
    std::ofstream out(device_path, std::ios::trunc);
    out << "[\n";
    for (size_t i = 0; i < device.size(); ++i)
        out << (i ? ",\n" : "") << device[i].dump(-1, ' ', false, json::error_handler_t::replace);
    out << "\n]\n";
    if (!out) throw std::runtime_error("cannot write the trace " + device_path);
}

}  // namespace jal::tools
