// Expects a call to throw jal::Error with a given status and a message containing given
// parts: the try / FAIL / catch / EXPECT block tests would otherwise write out each time.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <jal/error.hpp>

namespace jal::test {

// Expects `fn` to throw jal::Error with `status` and a message containing every one of
// `parts`; returns the message.
inline std::string expect_error(const std::function<void()>& fn, jal_status status,
                                const std::vector<std::string>& parts)
{
    try {
        fn();
    } catch (const Error& err) {
        const std::string msg = err.what();
        EXPECT_EQ(err.status(), status) << msg;
        for (const std::string& p : parts)
            EXPECT_NE(msg.find(p), std::string::npos) << "message lacks \"" << p << "\": " << msg;
        return msg;
    }
    ADD_FAILURE() << "no jal::Error thrown (expected one containing \""
                  << (parts.empty() ? "" : parts[0]) << "\")";
    return {};
}

}  // namespace jal::test
