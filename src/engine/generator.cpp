#include "engine/generator.h"

#include <algorithm>

#include "engine/logits_check.h"
#include "engine/sampler.h"
#include "engine/stop_strings.h"
#include "text/stream_decoder.h"
#include "text/tokenizer.h"

namespace ds4::engine {
namespace {

// Turns logits rows into emitted tokens: sampling, logprobs, eos, stop strings, streaming, cancellation.
// Speculative and plain decoding share it, so both emit exactly the same stream.
class Emitter {
 public:
  Emitter(const Model& model, const text::Tokenizer* tokenizer, const GenerationRequest& req,
          const TokenCallback& on_token, GenerationResult& res)
      : info_(model.info()), req_(req), on_token_(on_token), res_(res), sampler_(req.sampling, res.seed),
        stops_(req.stop) {
    if (tokenizer) decoder_.emplace(*tokenizer);
  }

  // Samples the token of one row and emits it. Returns false when generation is over (finish_reason set).
  bool emit(std::span<const float> row, int64_t pos, int32_t* token) {
    TokenEvent ev;
    try {
      ev.token = sampler_.sample(row, pos);
      if (req_.top_logprobs >= 0) {
        auto lp = log_softmax(row, pos);
        ev.logprob = lp[size_t(ev.token)];
        ev.top = top_logprobs(lp, size_t(req_.top_logprobs));
      }
    } catch (const Error& e) {
      return fail(e);
    }
    return deliver(std::move(ev), token);
  }

  // Whether the sampler would take the row's argmax as it is (greedy, no penalties) and nothing else is asked
  // of the row (no logprobs): then the model may pick the token itself (Model::forward_greedy).
  bool model_may_pick() const {
    return sampler_.is_greedy() && req_.sampling.presence_penalty == 0.0 && req_.sampling.frequency_penalty == 0.0 &&
           req_.top_logprobs < 0;
  }
  // Emits the token the model picked (model_may_pick), after the sampler's check of the row it came from.
  bool emit_picked(const GreedyPick& pick, int64_t pos, int32_t* token) {
    TokenEvent ev;
    try {
      ev.token = check_greedy_pick(pick, size_t(info_.vocab_size), pos);
    } catch (const Error& e) {
      return fail(e);
    }
    return deliver(std::move(ev), token);
  }
  // Releases what the decoder and the stop matcher still hold (nothing after a stop string matched).
  void finish() {
    if (!decoder_ || stops_.stopped() || res_.finish_reason == "error") return;
    std::string tail = stops_.feed(decoder_->flush()).text;
    if (stops_.stopped()) res_.finish_reason = "stop";
    else tail += stops_.flush();
    if (!tail.empty()) {
      res_.text += tail;
      if (on_token_) on_token_(TokenEvent{-1, tail, std::nullopt, {}});
    }
  }

 private:
  // Ends generation with an error for the row just computed (the state that produced it is discarded with the
  // caller's scope; nothing is emitted).
  bool fail(const Error& e) {
    res_.finish_reason = "error";
    res_.error = e;
    return false;
  }
  // Emits a chosen token: counts it, eos, stop strings, streaming, cancellation, the length limit.
  bool deliver(TokenEvent ev, int32_t* token) {
    *token = ev.token;
    sampler_.accept(ev.token);
    res_.tokens.push_back(ev.token);
    const bool eos = !req_.ignore_eos &&
                     std::find(info_.eos_ids.begin(), info_.eos_ids.end(), int64_t(ev.token)) != info_.eos_ids.end();
    bool stopped = eos;
    if (decoder_ && !eos) {
      StopFeed f = stops_.feed(decoder_->push(ev.token));
      ev.text = std::move(f.text);
      stopped = f.stopped;
    }
    res_.text += ev.text;
    if (on_token_ && !on_token_(ev)) {
      res_.finish_reason = "cancelled";
      return false;
    }
    if (stopped) {
      res_.finish_reason = "stop";
      return false;
    }
    if (int64_t(res_.tokens.size()) >= req_.max_tokens) {
      res_.finish_reason = "length";
      return false;
    }
    return true;
  }

  const ModelInfo& info_;
  const GenerationRequest& req_;
  const TokenCallback& on_token_;
  GenerationResult& res_;
  Sampler sampler_;
  std::optional<text::StreamDecoder> decoder_;
  StopMatcher stops_;
};

int32_t argmax(const std::vector<float>& v) { return int32_t(std::max_element(v.begin(), v.end()) - v.begin()); }

}  // namespace

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
  Emitter out(model, tokenizer, req, on_token, res);  // validates the sampling parameters before any compute
  res.finish_reason = "length";
  if (req.max_tokens == 0) return res;

  auto state = model.new_state();
  std::vector<float> logits;
  int32_t tok = 0;
  const bool plain = !req.speculative || !model.has_draft_head();
  // One forward call and the token of its last row. When the sampler would take the row's argmax as it is,
  // the model may pick it where the logits are (the CUDA backend: 8 bytes to the host instead of the row): the
  // same token, and the sampler's invalid-row errors from what the pick says of the row.
  auto step = [&](std::span<const int32_t> in) {
    GreedyPick pick;
    if (out.model_may_pick() && model.forward_greedy(*state, in, pick))
      return out.emit_picked(pick, state->position(), &tok);
    model.forward(*state, in, logits, false);
    return out.emit(logits, state->position(), &tok);
  };
  if (!step(req.prompt)) return out.finish(), res;

  if (plain) {
    while (step(std::span<const int32_t>(&tok, 1))) {
    }
    out.finish();
    return res;
  }

  // Depth-1 speculation. Invariant at the top of the loop: the state holds the sequence up to the token
  // before `tok`, the head has seen every pair but (h_last, tok), and `tok` was emitted.
  std::vector<float> draft_logits, rows;
  const int64_t V = info.vocab_size;
  // The draft is the head's greedy guess (the first index of the maximum), picked by the model where it can; the
  // sampler alone decides what is emitted, so the guess changes speed, never output.
  auto draft = [&](std::span<const int32_t> next_tokens) {
    GreedyPick pick;
    if (model.draft_greedy(*state, next_tokens, pick)) return pick.index >= 0 && pick.index < V ? int32_t(pick.index) : 0;
    model.draft(*state, next_tokens, draft_logits, false);
    return argmax(draft_logits);
  };
  std::vector<int32_t> pairs(req.prompt.begin() + 1, req.prompt.end());
  pairs.push_back(tok);
  int32_t guess = draft(pairs);
  // When the sampler would take each row's argmax as it is, the model may pick the verification rows' tokens where
  // the logits are (model_may_pick: the same tokens, and the sampler's errors from what the picks say of the rows).
  const bool picks = out.model_may_pick();
  GreedyPick row_picks[2];
  while (true) {
    // The way back if the draft is rejected: a mark where the state can take one (no copy of its caches), else a
    // clone.
    std::unique_ptr<SequenceState> before = state->mark() ? nullptr : state->clone();
    const int32_t verify[2] = {tok, guess};
    const bool picked = picks && model.forward_greedy_rows(*state, verify, row_picks);
    if (!picked) model.forward(*state, verify, rows, true);
    res.drafted++;
    auto emit_row = [&](int r, int64_t pos, int32_t* token) {
      return picked ? out.emit_picked(row_picks[r], pos, token)
                    : out.emit(std::span<const float>(rows.data() + r * V, size_t(V)), pos, token);
    };
    int32_t next = 0;
    const int64_t pos = state->position() - 1;  // the position of the row of `tok`
    if (!emit_row(0, pos, &next)) break;
    if (next == guess) {
      res.accepted++;
      int32_t after = 0;
      if (!emit_row(1, pos + 1, &after)) break;
      const int32_t new_pairs[2] = {guess, after};
      guess = draft(new_pairs);
      tok = after;
    } else {
      // Rejected: back to the state after `tok` alone (the draft's position is dropped). Its row was emitted
      // above: only the state is wanted, so a pick (8 bytes) rather than the row where the model can.
      if (before) state = std::move(before);
      else state->rewind();
      GreedyPick ignored;
      if (!model.forward_greedy(*state, std::span<const int32_t>(&tok, 1), ignored))
        model.forward(*state, std::span<const int32_t>(&tok, 1), logits, false);
      guess = draft(std::span<const int32_t>(&next, 1));
      tok = next;
    }
  }
  out.finish();
  return res;
}

}  // namespace ds4::engine
