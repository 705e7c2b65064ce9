// A test double for ds4::Model that "generates" scripted replies, for server behaviour random weights cannot
// produce (reasoning blocks, tool calls, stop strings at known places, invalid logits, long streams).
//
// Each reply has a trigger, text searched for in the prompt: the reply whose trigger occurs latest in the
// prompt is chosen (an empty trigger is the fallback). Its text is tokenized with the model's tokenizer and
// followed by an eos token; the logits put a large margin on the next scripted token, so any sampling
// settings emit it. A reply may repeat its text (long streams), give NaN logits at a step (invalid logits),
// or hold every step until a test opens a gate (deterministic queueing tests).
//
// The prompt is what the first forward() call consumes (the generator prefills the prompt in one call).
#pragma once
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "models/model.h"
#include "text/tokenizer.h"

namespace ds4::test {

// Holds the steps of gated replies until opened.
class Gate {
 public:
  void open() {
    std::lock_guard l(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock l(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(l, [&] { return open_; });
    --waiting_;
  }
  // Blocks until `n` steps wait at the gate.
  void wait_for_waiters(int n) {
    std::unique_lock l(mu_);
    cv_.wait(l, [&] { return waiting_ >= n || open_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int waiting_ = 0;
};

struct ScriptedReply {
  std::string trigger;
  std::string text;
  int64_t repeat = 1;     // the text this many times
  int64_t nan_at = -1;    // NaN logits at this generated step
  Gate* gate = nullptr;   // every step waits for it
};

class ScriptedModel : public Model {
 public:
  ScriptedModel(const text::Tokenizer& tok, std::vector<ScriptedReply> replies, int64_t max_positions = 1 << 24)
      : tok_(tok), replies_(std::move(replies)) {
    info_.family = "scripted";
    info_.model_type = "scripted";
    info_.vocab_size = int64_t(tok.vocab_size());
    info_.max_positions = max_positions;
    if (auto e = tok.token_to_id("<|im_end|>")) info_.eos_ids.push_back(*e);
    if (auto e = tok.token_to_id("<|endoftext|>")) info_.eos_ids.push_back(*e);
    for (const auto& r : replies_) tokens_.push_back(tok.encode(r.text, false));
  }

  const ModelInfo& info() const override { return info_; }

  std::unique_ptr<SequenceState> new_state() const override {
    live_states_++;
    return std::make_unique<State>(this);
  }

  void forward(SequenceState& s, std::span<const int32_t> tokens, std::vector<float>& logits,
               bool all_positions) const override {
    auto& st = static_cast<State&>(s);
    st.history.insert(st.history.end(), tokens.begin(), tokens.end());
    if (st.prompt_len < 0) {
      st.prompt_len = int64_t(st.history.size());
      st.reply = choose(tok_.decode(st.history, false));
    }
    const ScriptedReply& r = replies_[size_t(st.reply)];
    if (r.gate) r.gate->wait();
    const int64_t step = int64_t(st.history.size()) - st.prompt_len;
    const auto& toks = tokens_[size_t(st.reply)];
    const int64_t total = int64_t(toks.size()) * r.repeat;
    const int32_t next = step < total ? toks[size_t(step % int64_t(toks.size()))] : int32_t(info_.eos_ids.at(0));
    const size_t V = size_t(info_.vocab_size);
    logits.assign(all_positions ? V * tokens.size() : V, 0.0f);
    float* row = logits.data() + logits.size() - V;
    if (step == r.nan_at) {
      row[0] = std::numeric_limits<float>::quiet_NaN();
      return;
    }
    row[size_t(next)] = 40.0f;
  }

  // Sequence states alive now (the server must free every one).
  int64_t live_states() const { return live_states_; }

 private:
  struct State : SequenceState {
    explicit State(const ScriptedModel* m) : model(m) {}
    ~State() override { model->live_states_--; }
    int64_t position() const override { return int64_t(history.size()); }
    std::unique_ptr<SequenceState> clone() const override {
      model->live_states_++;
      return std::make_unique<State>(*this);
    }
    size_t bytes() const override { return history.size() * sizeof(int32_t); }
    const ScriptedModel* model;
    std::vector<int32_t> history;
    int64_t prompt_len = -1;
    int64_t reply = 0;
  };

  int64_t choose(const std::string& prompt) const {
    int64_t best = -1;
    size_t best_pos = 0;
    for (size_t i = 0; i < replies_.size(); ++i) {
      const auto& t = replies_[i].trigger;
      if (t.empty()) {
        if (best < 0) best = int64_t(i);
        continue;
      }
      const size_t p = prompt.rfind(t);
      if (p != std::string::npos && (best < 0 || replies_[size_t(best)].trigger.empty() || p >= best_pos)) {
        best = int64_t(i);
        best_pos = p;
      }
    }
    return best < 0 ? 0 : best;
  }

  text::Tokenizer tok_;
  std::vector<ScriptedReply> replies_;
  std::vector<std::vector<int32_t>> tokens_;
  ModelInfo info_;
  mutable std::atomic<int64_t> live_states_{0};
};

}  // namespace ds4::test
