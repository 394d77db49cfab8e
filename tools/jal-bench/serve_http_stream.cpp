#include "serve_http_stream.hpp"

#include <stdexcept>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace jal::bench {

namespace net = boost::asio;
namespace http = boost::beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

void connect(tcp::socket& socket, const HttpEndpoint& at)
{
    tcp::resolver resolver(socket.get_executor());
    net::connect(socket, resolver.resolve(at.host, at.port));
    socket.set_option(tcp::no_delay(true));
}

std::string completion_body(const BenchRequest& r, const std::string& model)
{
    nlohmann::json j = {{"prompt", r.prompt}, {"max_tokens", r.output_len},
                        {"ignore_eos", true}, {"temperature", 0},
                        {"stream", true},     {"stream_options", {{"include_usage", true}}}};
    if (!model.empty()) j["model"] = model;
    return j.dump();
}

// Folds the server-sent events of a stream into a RequestTiming as they arrive.
class EventReader {
public:
    EventReader(RequestTiming& t, double start_s) : t_(t), start_s_(start_s) {}

    // Bytes received at `now_s`; every complete event among them is taken.
    void feed(const char* data, size_t n, double now_s)
    {
        pending_.append(data, n);
        for (size_t end; (end = pending_.find("\n\n")) != std::string::npos;) {
            const std::string event = pending_.substr(0, end);
            pending_.erase(0, end + 2);
            if (event.rfind("data: ", 0) == 0) take(event.substr(6), now_s);
        }
    }
    bool done() const { return done_; }
    uint32_t counted() const { return counted_; }

private:
    void take(const std::string& data, double now_s)
    {
        if (data == "[DONE]") {
            done_ = true;
            t_.e2e_s = now_s - start_s_;
            return;
        }
        const nlohmann::json j = nlohmann::json::parse(data);
        if (j.contains("error")) throw std::runtime_error("server error: " + j["error"].dump());
        if (j.contains("usage") && j["usage"].is_object())
            t_.output_tokens = j["usage"].value("completion_tokens", 0u);
        if (!j.contains("choices") || j["choices"].empty()) return;
        const size_t ids = j["choices"][0].value("token_ids", nlohmann::json::array()).size();
        if (ids == 0) return;  // no content (a role or finish-only chunk)
        if (counted_ == 0)
            t_.ttft_s = now_s - start_s_;
        else
            t_.itl_s.push_back(now_s - last_s_);
        last_s_ = now_s;
        counted_ += static_cast<uint32_t>(ids);
    }

    RequestTiming& t_;
    double start_s_;
    double last_s_ = 0;
    std::string pending_;
    uint32_t counted_ = 0;
    bool done_ = false;
};

double seconds_since(Clock::time_point epoch)
{
    return std::chrono::duration<double>(Clock::now() - epoch).count();
}

// Reads the reply's body as it comes, handing each piece to `reader`.
void read_stream(tcp::socket& socket, EventReader& reader, Clock::time_point epoch)
{
    boost::beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    http::read_header(socket, buffer, parser);
    const unsigned status = parser.get().result_int();
    char chunk[16384];
    std::string error_body;
    while (!parser.is_done()) {
        parser.get().body().data = chunk;
        parser.get().body().size = sizeof chunk;
        boost::system::error_code ec;
        http::read_some(socket, buffer, parser, ec);
        if (ec && ec != http::error::need_buffer) throw boost::system::system_error(ec);
        const size_t n = sizeof chunk - parser.get().body().size;
        if (status != 200)
            error_body.append(chunk, n);
        else
            reader.feed(chunk, n, seconds_since(epoch));
    }
    if (status != 200)
        throw std::runtime_error("HTTP " + std::to_string(status) + ": " + error_body);
}

}  // namespace

RequestTiming stream_completion(const HttpEndpoint& at, const BenchRequest& request,
                                const std::string& model, Clock::time_point epoch)
{
    RequestTiming t;
    t.prompt_tokens = static_cast<uint32_t>(request.prompt.size());
    net::io_context io;
    tcp::socket socket(io);
    try {
        connect(socket, at);
        http::request<http::string_body> req{http::verb::post, "/v1/completions", 11};
        req.set(http::field::host, at.host + ":" + at.port);
        req.set(http::field::content_type, "application/json");
        req.body() = completion_body(request, model);
        req.prepare_payload();
        t.start_s = seconds_since(epoch);
        http::write(socket, req);
        EventReader reader(t, t.start_s);
        read_stream(socket, reader, epoch);
        if (!reader.done()) throw std::runtime_error("the stream ended without [DONE]");
        if (t.output_tokens == 0) t.output_tokens = reader.counted();
        if (reader.counted() != t.output_tokens)
            throw std::runtime_error("the stream's token ids and its usage disagree");
    } catch (const std::exception& e) {
        t.error = e.what();
    }
    boost::system::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    return t;
}

std::string http_get(const HttpEndpoint& at, const std::string& target)
{
    net::io_context io;
    tcp::socket socket(io);
    connect(socket, at);
    http::request<http::empty_body> req{http::verb::get, target, 11};
    req.set(http::field::host, at.host + ":" + at.port);
    http::write(socket, req);
    boost::beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(socket, buffer, res);
    if (res.result_int() != 200)
        throw std::runtime_error("GET " + target + ": HTTP " + std::to_string(res.result_int()));
    boost::system::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    return res.body();
}

}  // namespace jal::bench
