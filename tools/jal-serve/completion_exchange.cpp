#include "completion_exchange.hpp"

#include <cerrno>
#include <chrono>
#include <memory>
#include <optional>
#include <sys/socket.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/format.h>

#include "api_error.hpp"
#include "api_response.hpp"

namespace jal::serve {

namespace {

// A generation in progress, seen from the HTTP session's coroutine: the job, and a timer
// the engine thread cancels (through the session's executor) to wake the coroutine.
class Exchange {
public:
    Exchange(tcp::socket& socket, std::shared_ptr<Job> job)
        : job_(std::move(job)), timer_(std::make_shared<net::steady_timer>(socket.get_executor()))
    {
        job_->set_notify([timer = timer_, ex = socket.get_executor()] {
            net::post(ex, [timer] { timer->cancel(); });
        });
    }
    // The next update with news: new tokens or the end. The take() right before each wait
    // runs with no suspension in between, so a wake-up cannot fall between them.
    net::awaitable<Job::Update> next()
    {
        for (;;) {
            Job::Update u = job_->take();
            if (!u.tokens.empty() || u.finish != FinishReason::none) co_return u;
            timer_->expires_at(net::steady_timer::time_point::max());
            beast::error_code ec;
            co_await timer_->async_wait(net::redirect_error(net::use_awaitable, ec));
        }
    }
    Job& job() { return *job_; }
    std::shared_ptr<Job> shared_job() { return job_; }

private:
    std::shared_ptr<Job> job_;
    std::shared_ptr<net::steady_timer> timer_;
};

// While a whole (not streamed) reply is generated nothing is written, so a write error
// cannot tell that the client has gone: watch the connection, and cancel the generation
// if the client closes it. Ends at the first readable event, or when `done` is set and the
// socket's operations are cancelled (it then touches nothing but its arguments' copies).
net::awaitable<void> watch_for_hangup(tcp::socket& socket, std::shared_ptr<Job> job,
                                      std::shared_ptr<bool> done)
{
    beast::error_code ec;
    co_await socket.async_wait(tcp::socket::wait_read, net::redirect_error(net::use_awaitable, ec));
    if (ec || *done) co_return;
    char c;
    const ssize_t n = ::recv(socket.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) job->cancel();
}

ReplyHeader reply_header(ServeContext& ctx, bool chat)
{
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    return {fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl", ctx.next_id++),
            std::chrono::duration_cast<std::chrono::seconds>(now).count(), ctx.model.id, chat};
}

void append(ReplyDelta& all, const ReplyDelta& d)
{
    all.token_ids.insert(all.token_ids.end(), d.token_ids.begin(), d.token_ids.end());
    all.content += d.content;
    all.reasoning += d.reasoning;
    all.stopped = all.stopped || d.stopped;
}

// The finish reason a client sees; a stop string that matched is a "stop".
const char* client_finish(const Job::Update& u, const ReplyDelta& delta)
{
    if (delta.stopped || u.finish == FinishReason::stop) return "stop";
    return "length";
}

ApiError generation_failed(const Job::Update& u)
{
    // 499 (as nginx counts it): the client closed the connection; nobody reads this reply.
    return ApiError(u.finish == FinishReason::error ? 500 : 499,
                    u.error.empty() ? "the generation was cancelled" : u.error, {}, "server_error");
}

net::awaitable<Outcome> send_error(tcp::socket& socket, const HttpRequest& req, const ApiError& e)
{
    co_return co_await send_json(socket, req, static_cast<http::status>(e.status()), e.to_json());
}

net::awaitable<Outcome> reply_whole(tcp::socket& socket, const HttpRequest& req, Exchange& exchange,
                                    ReplyText& text, const ReplyHeader& h, uint32_t prompt_tokens)
{
    auto done = std::make_shared<bool>(false);
    net::co_spawn(socket.get_executor(), watch_for_hangup(socket, exchange.shared_job(), done),
                  net::detached);
    ReplyDelta all;
    for (;;) {
        Job::Update u = co_await exchange.next();
        ReplyDelta d = text.push(u.tokens);
        if (d.stopped) exchange.job().cancel();  // nothing after a stop string is shown
        append(all, d);
        if (u.finish == FinishReason::none && !d.stopped) continue;
        *done = true;
        beast::error_code ec;
        socket.cancel(ec);  // ends the watcher
        if (u.finish == FinishReason::error || u.finish == FinishReason::cancelled)
            co_return co_await send_error(socket, req, generation_failed(u));
        append(all, text.finish());
        const Usage usage{prompt_tokens, u.completion_tokens};
        co_return co_await send_json(socket, req, http::status::ok,
                                     full_reply(h, all, client_finish(u, all), usage));
    }
}

// The stream's order: the first chunk (a chat's role), the deltas, the last delta with
// the finish reason, the usage if asked for, [DONE].
net::awaitable<Outcome> reply_stream(tcp::socket& socket, const HttpRequest& req,
                                     Exchange& exchange, ReplyText& text, const ReplyHeader& h,
                                     uint32_t prompt_tokens, bool include_usage)
{
    EventStream stream(socket, req);
    bool first = true;
    if (!co_await stream.open()) exchange.job().cancel();
    while (stream.ok()) {
        Job::Update u = co_await exchange.next();
        ReplyDelta d = text.push(u.tokens);
        if (d.stopped) exchange.job().cancel();
        const bool done = u.finish != FinishReason::none || d.stopped;
        if (u.finish == FinishReason::error || u.finish == FinishReason::cancelled) {
            co_await stream.send(sse_event(generation_failed(u).to_json()));
            break;
        }
        if (done) append(d, text.finish());
        std::string events;
        if (!d.empty() || first || done)
            events += sse_event(reply_chunk(h, d, done ? client_finish(u, d) : nullptr, first));
        first = false;
        if (done && include_usage)
            events += sse_event(usage_chunk(h, Usage{prompt_tokens, u.completion_tokens}));
        // A failed write means the client went away: the engine frees the sequence.
        if (!co_await stream.send(events)) exchange.job().cancel();
        if (done) break;
    }
    const bool closed = stream.ok() && co_await stream.close();
    co_return Outcome{200, closed && req.keep_alive()};
}

}  // namespace

net::awaitable<Outcome> serve_completion(ServeContext& ctx, tcp::socket& socket,
                                         const HttpRequest& req, bool chat)
{
    ApiRequest request;
    GenerationParams params;
    std::optional<ApiError> invalid;  // co_await may not appear in a catch block
    try {
        request = parse_api_request(req.body(), chat);
        params = plan_generation(request, ctx.model, ctx.codec);
    } catch (const ApiError& e) {
        invalid = e;
    }
    if (invalid) co_return co_await send_error(socket, req, *invalid);
    const uint32_t prompt_tokens = static_cast<uint32_t>(params.prompt.size());
    auto job = std::make_shared<Job>(std::move(params));
    Exchange exchange(socket, job);
    switch (ctx.engine.submit(job)) {
    case Engine::Admission::accepted:
        break;
    case Engine::Admission::busy:
        co_return co_await send_error(
            socket, req,
            ApiError(429,
                     fmt::format("the server is at its limit of {} concurrent requests "
                                 "(--max-concurrency); retry later",
                                 ctx.max_in_flight),
                     {}, "rate_limit_error"));
    case Engine::Admission::stopping:
        co_return co_await send_error(
            socket, req, ApiError(503, "the server is shutting down", {}, "server_error"));
    }
    ReplyText text(chat ? ctx.codec.chat_decoder() : ctx.codec.completion_decoder(), request.stop);
    const ReplyHeader h = reply_header(ctx, chat);
    if (request.stream)
        co_return co_await reply_stream(socket, req, exchange, text, h, prompt_tokens,
                                        request.include_usage);
    co_return co_await reply_whole(socket, req, exchange, text, h, prompt_tokens);
}

}  // namespace jal::serve
