// The HTTP side of jal-serve (Boost.Beast on one Asio thread, C++20 coroutines): accepts
// connections, routes requests to the handlers, and stops accepting on shutdown while the
// requests in flight finish (docs/serving.md, "Shutdown").
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>

#include <boost/asio/io_context.hpp>

#include "completion_exchange.hpp"
#include "http_io.hpp"

namespace jal::serve {

class HttpServer {
public:
    HttpServer(net::io_context& io, ServeContext& ctx);

    // Binds and listens; returns the port (the one the system picked for port 0).
    uint16_t listen(const std::string& host, uint16_t port);
    // Starts accepting (on the io_context's thread).
    void start();
    // Stops accepting and closes idle connections; connections with a request in flight
    // close once it is answered. `on_quiet` runs (on the io thread) when none is left.
    void stop_accepting(std::function<void()> on_quiet);
    size_t connections() const { return sessions_; }

private:
    net::awaitable<void> accept_loop();
    net::awaitable<void> session(tcp::socket socket);
    net::awaitable<Outcome> route(tcp::socket& socket, const HttpRequest& req,
                                  std::string& endpoint);
    net::awaitable<Outcome> models(tcp::socket& socket, const HttpRequest& req);
    void session_ended();

    net::io_context& io_;
    ServeContext& ctx_;
    tcp::acceptor acceptor_;
    bool stopping_ = false;
    size_t sessions_ = 0;
    std::set<tcp::socket*> idle_;  // sessions waiting for their next request
    std::function<void()> on_quiet_;
};

}  // namespace jal::serve
