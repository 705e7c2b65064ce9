#include "engine/generator.h"

#include <algorithm>

#include "engine/sampler.h"
#include "engine/stop_strings.h"
#include "text/stream_decoder.h"
#include "text/tokenizer.h"

namespace ds4::engine {

GenerationResult generate(const Model& model, const text::Tokenizer* tokenizer, const GenerationRequest& req,
                          const TokenCallback& on_token) {
  const ModelInfo& info = model.info();
  if (req.prompt.empty()) throw Error(ErrorKind::InvalidArgument, "the prompt is empty");
  if (req.max_tokens < 0) throw Error(ErrorKind::InvalidArgument, "max_tokens must not be negative");
  if (int64_t(req.prompt.size()) + req.max_tokens > info.max_positions)
    throw Error(ErrorKind::InvalidArgument,
                "prompt (" + std::to_string(req.prompt.size()) + " tokens) plus max_tokens (" +
                    std::to_string(req.max_tokens) + ") exceeds the context of " + std::to_string(info.max_positions));
  GenerationResult res;
  res.prompt_tokens = int64_t(req.prompt.size());
  res.seed = seed_or_os(req.seed);
  Sampler sampler(req.sampling, res.seed);  // validates the parameters before any compute

  std::optional<text::StreamDecoder> decoder;
  if (tokenizer) decoder.emplace(*tokenizer);
  StopMatcher stops(req.stop);
  auto state = model.new_state();
  std::vector<float> logits;
  model.forward(*state, req.prompt, logits, false);
  res.finish_reason = "length";
  for (int64_t i = 0; i < req.max_tokens; i++) {
    const int64_t pos = state->position();
    TokenEvent ev;
    try {
      ev.token = sampler.sample(logits, pos);
      if (req.top_logprobs >= 0) {
        auto lp = log_softmax(logits, pos);
        ev.logprob = lp[size_t(ev.token)];
        ev.top = top_logprobs(lp, size_t(req.top_logprobs));
      }
    } catch (const Error& e) {
      // The state that produced this row is discarded with this function's scope; nothing is emitted.
      res.finish_reason = "error";
      res.error = e;
      return res;
    }
    sampler.accept(ev.token);
    res.tokens.push_back(ev.token);
    const bool eos = !req.ignore_eos &&
                     std::find(info.eos_ids.begin(), info.eos_ids.end(), int64_t(ev.token)) != info.eos_ids.end();
    bool stopped = eos;
    if (decoder && !eos) {
      StopFeed f = stops.feed(decoder->push(ev.token));
      ev.text = std::move(f.text);
      stopped = f.stopped;
    }
    res.text += ev.text;
    if (on_token && !on_token(ev)) {
      res.finish_reason = "cancelled";
      return res;
    }
    if (stopped) {
      res.finish_reason = "stop";
      break;
    }
    if (i + 1 < req.max_tokens) model.forward(*state, std::span<const int32_t>(&ev.token, 1), logits, false);
  }
  // Release what the decoder and the stop matcher still hold (nothing after a stop string matched).
  if (decoder && !stops.stopped()) {
    std::string tail = stops.feed(decoder->flush()).text;
    if (stops.stopped()) res.finish_reason = "stop";
    else tail += stops.flush();
    if (!tail.empty()) {
      res.text += tail;
      if (on_token) on_token(TokenEvent{-1, tail, std::nullopt, {}});
    }
  }
  return res;
}

}  // namespace ds4::engine
