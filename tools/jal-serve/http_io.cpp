#include "http_io.hpp"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace jal::serve {

namespace {

auto token(beast::error_code& ec)
{
    return net::redirect_error(net::use_awaitable, ec);
}

}  // namespace

net::awaitable<Outcome> send_response(tcp::socket& socket, const HttpRequest& req,
                                      http::status status, std::string body,
                                      const std::string& content_type, const std::string& allow)
{
    http::response<http::string_body> res{status, req.version()};
    res.set(http::field::server, "jal-serve");
    res.set(http::field::content_type, content_type);
    if (!allow.empty()) res.set(http::field::allow, allow);
    res.keep_alive(req.keep_alive());
    res.body() = std::move(body);
    res.prepare_payload();
    beast::error_code ec;
    co_await http::async_write(socket, res, token(ec));
    co_return Outcome{static_cast<unsigned>(status), !ec && req.keep_alive()};
}

net::awaitable<Outcome> send_json(tcp::socket& socket, const HttpRequest& req, http::status status,
                                  const nlohmann::json& body)
{
    co_return co_await send_response(socket, req, status, body.dump() + "\n", "application/json");
}

std::string sse_event(const nlohmann::json& data)
{
    // dump() escapes control characters, so the event is one line.
    return "data: " + data.dump() + "\n\n";
}

net::awaitable<bool> EventStream::open()
{
    http::response<http::empty_body> res{http::status::ok, req_.version()};
    res.set(http::field::server, "jal-serve");
    res.set(http::field::content_type, "text/event-stream");
    res.set(http::field::cache_control, "no-cache");
    res.keep_alive(req_.keep_alive());
    res.chunked(true);
    http::response_serializer<http::empty_body> sr{res};
    beast::error_code ec;
    co_await http::async_write_header(socket_, sr, token(ec));
    ok_ = !ec;
    co_return ok_;
}

net::awaitable<bool> EventStream::send(const std::string& events)
{
    if (!ok_ || events.empty()) co_return ok_;
    beast::error_code ec;
    co_await net::async_write(socket_, http::make_chunk(net::buffer(events)), token(ec));
    ok_ = !ec;
    co_return ok_;
}

net::awaitable<bool> EventStream::close()
{
    if (!co_await send("data: [DONE]\n\n")) co_return false;
    beast::error_code ec;
    co_await net::async_write(socket_, http::make_chunk_last(), token(ec));
    ok_ = !ec;
    co_return ok_;
}

}  // namespace jal::serve
