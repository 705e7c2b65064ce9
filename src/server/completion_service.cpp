#include "server/completion_service.h"

#include <chrono>

#include "engine/sampler.h"
#include "server/api_error.h"
#include "server/event_channel.h"
#include "server/output_assembler.h"
#include "server/sse_writer.h"

namespace ds4::server {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Time to first token and inter-token latency, measured on the worker as tokens are produced.
struct TokenTimer {
  Clock::time_point arrival, last;
  bool first = true;
  void tick(Metrics& m) {
    const auto now = Clock::now();
    if (first) m.observe_time_to_first_token(std::chrono::duration<double>(now - arrival).count());
    else m.observe_inter_token_latency(std::chrono::duration<double>(now - last).count());
    first = false;
    last = now;
  }
};

// One streamed response, shared by httplib's content provider and its releaser.
struct Stream {
  std::shared_ptr<EventChannel> channel;
  std::shared_ptr<engine::Job> job;
  std::unique_ptr<OutputAssembler> assembler;
  std::deque<EventChannel::Event> pending;  // events read before the stream started
  Metrics* metrics = nullptr;
  std::string route;
  Clock::time_point arrival;
  bool started = false, finished = false, aborted = false;

  // The client is gone (or the server stops): cancel the generation at its next token.
  void abort() {
    if (finished || aborted) return;
    aborted = true;
    // Counted before the cancellation, so whoever sees the sequence gone also sees it counted.
    metrics->count_cancelled();
    channel->close();
    job->cancel();
    end();
  }
  void end() {
    metrics->count_request(route, 200);
    metrics->observe_request_duration(seconds_since(arrival));
  }
};

}  // namespace

struct CompletionService::Prepared {
  std::string route;
  Clock::time_point arrival;
  engine::GenerationRequest gen;
  bool stream = false;
  std::unique_ptr<OutputAssembler> assembler;
};

CompletionService::CompletionService(const ServedModel& model, engine::Scheduler& scheduler, Metrics& metrics,
                                     ServiceOptions options)
    : model_(model), scheduler_(scheduler), metrics_(metrics), options_(options) {}

void CompletionService::send_error(const std::string& route, const ApiError& e, httplib::Response& res) {
  res.status = e.status();
  if (e.status() == 503) res.set_header("Retry-After", std::to_string(options_.retry_after_seconds));
  res.set_content(dump_json(e.body()), "application/json");
  metrics_.count_request(route, e.status());
}

engine::GenerationRequest CompletionService::generation_request(const GenerationOptions& o,
                                                                std::vector<int32_t> prompt,
                                                                const std::string& prompt_param) const {
  if (o.model != model_.id())
    throw ApiError(404, "invalid_request_error", "The model '" + o.model + "' does not exist; this server serves '" +
                                                     model_.id() + "'",
                   "model", "model_not_found");
  const int64_t ctx = model_.context(), n = int64_t(prompt.size());
  if (n >= ctx)
    throw invalid_request("This model's maximum context length is " + std::to_string(ctx) + " tokens, but the prompt has " +
                              std::to_string(n) + " tokens",
                          prompt_param, "context_length_exceeded");
  if (o.max_tokens && n + *o.max_tokens > ctx)
    throw invalid_request("This model's maximum context length is " + std::to_string(ctx) + " tokens, but " +
                              std::to_string(n) + " prompt tokens plus max_tokens " + std::to_string(*o.max_tokens) +
                              " is " + std::to_string(n + *o.max_tokens),
                          "max_tokens", "context_length_exceeded");
  try {
    engine::validate_sampling_params(o.sampling);
  } catch (const Error& e) {
    throw invalid_request(e.what(), "", "invalid_value");
  }
  engine::GenerationRequest g;
  g.prompt = std::move(prompt);
  g.max_tokens = o.max_tokens.value_or(ctx - n);
  g.sampling = o.sampling;
  g.seed = engine::seed_or_os(o.seed);  // drawn here so it can be reported before the first token
  g.stop = o.stop;
  g.top_logprobs = o.top_logprobs;
  g.speculative = options_.speculative;
  return g;
}

void CompletionService::chat(const httplib::Request& req, httplib::Response& res) {
  const std::string route = "/v1/chat/completions";
  Prepared p;
  p.route = route;
  p.arrival = Clock::now();
  try {
    ChatRequest r = parse_chat_request(req.body, model_.sampling_defaults());
    if (r.options.model != model_.id()) generation_request(r.options, {}, "messages");  // 404 before rendering
    ChatPrompt prompt = model_.chat_prompt(r);
    p.gen = generation_request(r.options, std::move(prompt.tokens), "messages");
    p.stream = r.options.stream;
    AssemblerOptions ao{{new_response_id("chatcmpl-"), unix_now(), model_.id(), *p.gen.seed},
                        int64_t(p.gen.prompt.size()), r.options.top_logprobs, r.options.stream,
                        r.options.include_usage};
    ChatOutputOptions co;
    co.format = model_.output_format();
    co.starts_in_reasoning = prompt.starts_in_reasoning;
    co.parse_tools = r.tool_choice.mode != ToolChoiceMode::None && !r.tools.empty();
    for (const auto& t : r.tools) co.tool_names.push_back(t["function"]["name"]);
    co.forced_prefix = prompt.forced_prefix;
    p.assembler = make_chat_assembler(model_, std::move(ao), std::move(co));
  } catch (const std::exception& e) {
    return send_error(route, to_api_error(e), res);
  }
  run(std::move(p), res);
}

void CompletionService::completion(const httplib::Request& req, httplib::Response& res) {
  const std::string route = "/v1/completions";
  Prepared p;
  p.route = route;
  p.arrival = Clock::now();
  try {
    CompletionRequest r = parse_completion_request(req.body, model_.sampling_defaults());
    if (r.options.model != model_.id()) generation_request(r.options, {}, "prompt");
    p.gen = generation_request(r.options, model_.completion_prompt(r), "prompt");
    p.stream = r.options.stream;
    AssemblerOptions ao{{new_response_id("cmpl-"), unix_now(), model_.id(), *p.gen.seed},
                        int64_t(p.gen.prompt.size()), r.options.top_logprobs, r.options.stream,
                        r.options.include_usage};
    p.assembler = make_text_assembler(model_, std::move(ao));
  } catch (const std::exception& e) {
    return send_error(route, to_api_error(e), res);
  }
  run(std::move(p), res);
}

void CompletionService::run(Prepared p, httplib::Response& res) {
  auto channel = std::make_shared<EventChannel>();
  auto timer = std::make_shared<TokenTimer>();
  timer->arrival = p.arrival;
  Metrics* metrics = &metrics_;
  const int64_t prompt_tokens = int64_t(p.gen.prompt.size());
  auto job = scheduler_.submit(
      std::move(p.gen),
      [channel, timer, metrics](const engine::TokenEvent& ev) {
        timer->tick(*metrics);
        return channel->push_token(ev);
      },
      [channel, metrics, prompt_tokens](engine::GenerationResult r) {
        if (r.finish_reason != "error") metrics->add_tokens(prompt_tokens, int64_t(r.tokens.size()));
        channel->push_done(std::move(r));
      });
  if (!job)
    return send_error(p.route,
                      ApiError(503, "server_error", "The server is busy: too many queued requests, retry later", "",
                               "server_overloaded"),
                      res);

  // The first events decide the status: an error before any token is an HTTP error, not a broken stream.
  std::deque<EventChannel::Event> first = channel->wait();
  if (first.front().done && first.front().done->finish_reason == "error") {
    const auto& err = first.front().done->error;
    return send_error(p.route, to_api_error(err ? *err : Error(ErrorKind::Internal, "generation failed")), res);
  }

  if (!p.stream) {
    std::deque<EventChannel::Event> events = std::move(first);
    for (;;) {
      for (auto& ev : events) {
        if (ev.token) {
          p.assembler->on_token(*ev.token);
          continue;
        }
        const engine::GenerationResult& r = *ev.done;
        if (r.finish_reason == "error")
          return send_error(p.route, to_api_error(r.error ? *r.error : Error(ErrorKind::Internal, "generation failed")),
                            res);
        p.assembler->on_done(r);
        res.set_content(dump_json(p.assembler->whole()), "application/json");
        metrics_.count_request(p.route, 200);
        metrics_.observe_request_duration(seconds_since(p.arrival));
        return;
      }
      events = channel->wait();
    }
  }

  auto st = std::make_shared<Stream>();
  st->channel = channel;
  st->job = job;
  st->assembler = std::move(p.assembler);
  st->pending = std::move(first);
  st->metrics = &metrics_;
  st->route = p.route;
  st->arrival = p.arrival;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [st](size_t, httplib::DataSink& sink) {
        std::string out;
        if (!st->started) {
          for (const auto& c : st->assembler->start_chunks()) out += sse_data(c);
          st->started = true;
        }
        std::deque<EventChannel::Event> events = st->pending.empty() ? st->channel->wait() : std::move(st->pending);
        st->pending.clear();
        bool done = false;
        for (auto& ev : events) {
          if (ev.token) {
            for (const auto& c : st->assembler->on_token(*ev.token)) out += sse_data(c);
            continue;
          }
          const engine::GenerationResult& r = *ev.done;
          if (r.finish_reason == "error") {
            out += sse_data(to_api_error(r.error ? *r.error : Error(ErrorKind::Internal, "generation failed")).body());
          } else {
            for (const auto& c : st->assembler->on_done(r)) out += sse_data(c);
            out += sse_done();
          }
          done = true;
          break;
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) {
          st->abort();
          return false;
        }
        if (done) {
          st->finished = true;
          st->end();
          sink.done();
        }
        return true;
      },
      [st](bool) { st->abort(); });
}

}  // namespace ds4::server
