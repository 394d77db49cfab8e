// An error reply in the OpenAI shape:
//   {"error": {"message": ..., "type": "invalid_request_error", "param": ..., "code": null}}
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace jal::serve {

class ApiError : public std::runtime_error {
public:
    ApiError(unsigned status, std::string message, std::string param = {},
             std::string type = "invalid_request_error")
        : std::runtime_error(message), status_(status), param_(std::move(param)),
          type_(std::move(type))
    {}
    unsigned status() const { return status_; }
    const std::string& param() const { return param_; }
    const std::string& type() const { return type_; }

    nlohmann::json to_json() const
    {
        return {{"error",
                 {{"message", what()},
                  {"type", type_},
                  {"param", param_.empty() ? nlohmann::json(nullptr) : nlohmann::json(param_)},
                  {"code", nullptr}}}};
    }

private:
    unsigned status_;
    std::string param_;
    std::string type_;
};

// 400 invalid_request_error about `param`.
inline ApiError bad_request(std::string message, std::string param = {})
{
    return ApiError(400, std::move(message), std::move(param));
}

}  // namespace jal::serve
