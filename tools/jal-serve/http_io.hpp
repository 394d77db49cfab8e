// Boost.Beast plumbing shared by the server's handlers: one type for a request, writing a
// whole response, and the server-sent-event stream of a streamed reply (HTTP/1.1 chunked).
#pragma once

#include <string>
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace jal::serve {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using HttpRequest = http::request<http::string_body>;

// What a handler did: the status it answered with (for the metrics) and whether the
// connection may carry another request.
struct Outcome {
    unsigned status = 200;
    bool keep_alive = false;
};

// Writes one response. keep_alive: the request's wish, false on a write error.
net::awaitable<Outcome> send_response(tcp::socket& socket, const HttpRequest& req,
                                      http::status status, std::string body,
                                      const std::string& content_type,
                                      const std::string& allow = {});
net::awaitable<Outcome> send_json(tcp::socket& socket, const HttpRequest& req, http::status status,
                                  const nlohmann::json& body);

// A text/event-stream response written a piece at a time. Each method returns false once
// a write has failed (the client went away); later calls then do nothing.
class EventStream {
public:
    EventStream(tcp::socket& socket, const HttpRequest& req) : socket_(socket), req_(req) {}
    net::awaitable<bool> open();
    // "data: <json>\n\n" for each; written as one HTTP chunk.
    net::awaitable<bool> send(const std::string& events);
    // "data: [DONE]\n\n" and the last chunk.
    net::awaitable<bool> close();
    bool ok() const { return ok_; }

private:
    tcp::socket& socket_;
    const HttpRequest& req_;
    bool ok_ = true;
};

std::string sse_event(const nlohmann::json& data);

}  // namespace jal::serve
