#include "event_decode.hpp"

#include <fmt/format.h>

#include <jal/hw/events.h>

#include "json_views.hpp"

namespace jal::ctl {

namespace {

// One argument as a (key, value) pair; the key carries the unit of a numeric kind.
std::pair<std::string, json> decode_arg(const jal_event_arg_desc& arg, uint32_t v)
{
    std::string name = arg.name;
    switch (arg.kind) {
    case JAL_ARG_MW:
        return {name + "_w", milli(v)};
    case JAL_ARG_MC:
        return {name + "_c", milli(static_cast<int32_t>(v))};
    case JAL_ARG_MHZ:
        return {name + "_mhz", v};
    case JAL_ARG_MS:
        return {name + "_ms", v};
    case JAL_ARG_MUI:
        return {name + "_mui", v};
    case JAL_ARG_HEX:
        return {name, hex(v)};
    case JAL_ARG_POST_CODE:
        return {name, hex(v, 4)};
    case JAL_ARG_BOOL:
        return {name, v != 0};
    case JAL_ARG_DEC:
        return {name, v};
    default:
        break;
    }
    const char* value = jal_event_arg_name(arg.kind, v);
    return {name, value ? json(value) : json(v)};
}

std::string value_text(const json& v)
{
    if (v.is_string()) return v.get<std::string>();
    if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
    return v.dump();
}

}  // namespace

std::string event_name(const jal_log_event& e)
{
    const jal_event_desc* desc = jal_event_describe(e.code);
    return desc ? desc->name : hex(e.code, 4);
}

json event_fields(const jal_log_event& e)
{
    json fields = json::object();
    const jal_event_desc* desc = jal_event_describe(e.code);
    for (uint32_t i = 0; i < 4; i++) {
        if (!desc) {
            if (e.args[i]) fields[fmt::format("arg{}", i)] = e.args[i];
            continue;
        }
        const jal_event_arg_desc& arg = desc->args[i];
        if (!arg.name) continue;
        auto [key, value] = decode_arg(arg, e.args[i]);
        fields[key] = value;
        if (arg.kind == JAL_ARG_POST_CODE) fields[key + "_step"] = jal_post_step_name(e.args[i]);
    }
    return fields;
}

std::string event_fields_text(const jal_log_event& e)
{
    const jal_event_desc* desc = jal_event_describe(e.code);
    std::string out;
    for (uint32_t i = 0; i < 4; i++) {
        std::string item;
        if (!desc) {
            if (e.args[i]) item = fmt::format("arg{}={}", i, e.args[i]);
        } else if (const jal_event_arg_desc& arg = desc->args[i]; arg.name) {
            auto [key, value] = decode_arg(arg, e.args[i]);
            if (arg.kind == JAL_ARG_MW)
                item = fmt::format("{}={:.1f}W", arg.name, value.get<double>());
            else if (arg.kind == JAL_ARG_MC)
                item = fmt::format("{}={:.1f}°C", arg.name, value.get<double>());
            else if (arg.kind == JAL_ARG_POST_CODE)
                item = fmt::format("{}={}", arg.name, post_code_text(e.args[i]));
            else
                item = fmt::format("{}={}{}", arg.name, value_text(value),
                                   jal_event_arg_unit(arg.kind));
        }
        if (item.empty()) continue;
        if (!out.empty()) out += ' ';
        out += item;
    }
    return out;
}

std::string post_code_text(uint32_t post_code)
{
    return fmt::format("{} ({})", hex(post_code, 4), jal_post_step_name(post_code));
}

}  // namespace jal::ctl
