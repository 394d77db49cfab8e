#include "http_server.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>

#include "api_error.hpp"

namespace jal::serve {

namespace {

constexpr uint64_t kBodyLimit = 16u << 20;  // bytes of a request body

// The endpoints: path, method, and the name the metrics count them under.
struct Endpoint {
    const char* path;
    http::verb method;
};
constexpr Endpoint kEndpoints[] = {{"/health", http::verb::get},
                                   {"/metrics", http::verb::get},
                                   {"/v1/models", http::verb::get},
                                   {"/v1/completions", http::verb::post},
                                   {"/v1/chat/completions", http::verb::post}};

std::string path_of(const HttpRequest& req)
{
    std::string target(req.target());
    return target.substr(0, target.find('?'));
}

}  // namespace

HttpServer::HttpServer(net::io_context& io, ServeContext& ctx) : io_(io), ctx_(ctx), acceptor_(io)
{}

uint16_t HttpServer::listen(const std::string& host, uint16_t port)
{
    tcp::endpoint ep(net::ip::make_address(host), port);
    acceptor_.open(ep.protocol());
    acceptor_.set_option(net::socket_base::reuse_address(true));
    acceptor_.bind(ep);
    acceptor_.listen();
    return acceptor_.local_endpoint().port();
}

void HttpServer::start()
{
    net::co_spawn(io_, accept_loop(), net::detached);
}

void HttpServer::stop_accepting(std::function<void()> on_quiet)
{
    stopping_ = true;
    on_quiet_ = std::move(on_quiet);
    beast::error_code ec;
    acceptor_.close(ec);
    for (tcp::socket* s : idle_) s->cancel(ec);
    if (sessions_ == 0 && on_quiet_) on_quiet_();
}

net::awaitable<void> HttpServer::accept_loop()
{
    while (acceptor_.is_open()) {
        beast::error_code ec;
        tcp::socket socket =
            co_await acceptor_.async_accept(net::redirect_error(net::use_awaitable, ec));
        if (ec) continue;  // closed (the loop ends) or a transient failure
        socket.set_option(tcp::no_delay(true), ec);  // a streamed token is one small write
        sessions_++;
        net::co_spawn(io_, session(std::move(socket)), net::detached);
    }
}

// The next request's header, then (after a 100 Continue if the client waits for one) its
// body. False when the connection closed or sent something else than HTTP.
static net::awaitable<bool> read_request(tcp::socket& socket, beast::flat_buffer& buffer,
                                         http::request_parser<http::string_body>& parser)
{
    beast::error_code ec;
    auto token = net::redirect_error(net::use_awaitable, ec);
    co_await http::async_read_header(socket, buffer, parser, token);
    if (ec) co_return false;
    // curl asks before sending a body over 1 KiB and otherwise waits a second for this.
    if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
        http::response<http::empty_body> go_on{http::status::continue_, parser.get().version()};
        co_await http::async_write(socket, go_on, token);
        if (ec) co_return false;
    }
    co_await http::async_read(socket, buffer, parser, token);
    co_return !ec;
}

// One connection: requests one after another (HTTP/1.1 keep-alive) until the client
// closes, a response ends the connection, or the server stops.
net::awaitable<void> HttpServer::session(tcp::socket socket)
{
    beast::flat_buffer buffer;
    while (!stopping_) {
        http::request_parser<http::string_body> parser;
        parser.body_limit(kBodyLimit);
        idle_.insert(&socket);
        const bool read = co_await read_request(socket, buffer, parser);
        idle_.erase(&socket);
        if (!read) break;  // closed, cancelled by shutdown, or not HTTP
        HttpRequest req = parser.release();
        std::string endpoint;
        Outcome out;
        std::string failure;  // co_await may not appear in a catch block
        try {
            out = co_await route(socket, req, endpoint);
        } catch (const std::exception& e) {
            failure = e.what();
        }
        if (!failure.empty())
            out = co_await send_json(socket, req, http::status::internal_server_error,
                                     ApiError(500, failure, {}, "server_error").to_json());
        ctx_.metrics.count_request(endpoint, out.status);
        if (!out.keep_alive) break;
    }
    beast::error_code ec;
    socket.shutdown(tcp::socket::shutdown_send, ec);
    session_ended();
}

void HttpServer::session_ended()
{
    sessions_--;
    if (stopping_ && sessions_ == 0 && on_quiet_) on_quiet_();
}

net::awaitable<Outcome> HttpServer::route(tcp::socket& socket, const HttpRequest& req,
                                          std::string& endpoint)
{
    const std::string path = path_of(req);
    const Endpoint* found = nullptr;
    for (const Endpoint& e : kEndpoints)
        if (path == e.path) found = &e;
    if (!found) {
        endpoint = "other";  // unknown paths share one label: clients cannot grow the metrics
        co_return co_await send_json(socket, req, http::status::not_found,
                                     ApiError(404, "no such endpoint: " + path).to_json());
    }
    endpoint = found->path;
    if (req.method() != found->method) {
        const std::string allow(http::to_string(found->method));
        co_return co_await send_response(socket, req, http::status::method_not_allowed,
                                         ApiError(405, path + " takes " + allow).to_json().dump() +
                                             "\n",
                                         "application/json", allow);
    }
    // (json values are built before co_await: GCC 12 rejects some brace lists inside one.)
    if (path == "/health") {
        const nlohmann::json ok = {{"status", "ok"}};
        co_return co_await send_json(socket, req, http::status::ok, ok);
    }
    if (path == "/metrics")
        co_return co_await send_response(socket, req, http::status::ok, ctx_.metrics.render(),
                                         "text/plain; version=0.0.4");
    if (path == "/v1/models") co_return co_await models(socket, req);
    co_return co_await serve_completion(ctx_, socket, req, path == "/v1/chat/completions");
}

net::awaitable<Outcome> HttpServer::models(tcp::socket& socket, const HttpRequest& req)
{
    nlohmann::json model = {{"id", ctx_.model.id},
                            {"object", "model"},
                            {"created", 0},
                            {"owned_by", "jal"},
                            {"max_model_len", ctx_.model.n_ctx},
                            {"vocabulary", ctx_.codec.has_vocabulary()}};
    const nlohmann::json list = {{"object", "list"}, {"data", nlohmann::json::array({model})}};
    co_return co_await send_json(socket, req, http::status::ok, list);
}

}  // namespace jal::serve
