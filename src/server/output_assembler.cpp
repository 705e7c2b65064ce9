#include "server/output_assembler.h"

#include <algorithm>

#include "server/served_model.h"

namespace ds4::server {

std::string finish_reason_of(const engine::GenerationResult& r, bool made_tool_calls) {
  if (r.finish_reason == "length") return "length";
  return made_tool_calls ? "tool_calls" : "stop";
}

namespace {

// What both assemblers share: logprob entries, token counts, usage.
class AssemblerBase : public OutputAssembler {
 public:
  AssemblerBase(const ServedModel& model, AssemblerOptions o) : model_(model), o_(std::move(o)) {}

 protected:
  // Token -1 is the generator's last event: text released at the end, no token of its own.
  void count(const engine::TokenEvent& ev) {
    if (ev.token < 0) return;
    ++tokens_;
    if (o_.top_logprobs < 0) return;
    TokenLogprobEntry e;
    e.token = model_.token_text(ev.token);
    e.logprob = ev.logprob.value_or(0.0);
    for (const auto& t : ev.top) e.top.emplace_back(model_.token_text(t.id), t.logprob);
    all_logprobs_.push_back(e);
    pending_logprobs_.push_back(std::move(e));
  }
  Usage usage(const engine::GenerationResult& r) const {
    return {o_.prompt_tokens, std::max<int64_t>(tokens_, int64_t(r.tokens.size()))};
  }
  bool logprobs_on() const { return o_.top_logprobs >= 0; }

  const ServedModel& model_;
  AssemblerOptions o_;
  int64_t tokens_ = 0;
  std::vector<TokenLogprobEntry> all_logprobs_, pending_logprobs_;  // pending: not yet sent in a chunk
  std::string finish_;
  Usage usage_;
};

class ChatAssembler : public AssemblerBase {
 public:
  ChatAssembler(const ServedModel& model, AssemblerOptions o, ChatOutputOptions out)
      : AssemblerBase(model, std::move(o)), output_(std::move(out)) {}

  std::vector<ojson> start_chunks() override {
    return {chat_chunk_json(o_.meta, {{"role", "assistant"}, {"content", ""}}, std::nullopt, nullptr, o_.include_usage)};
  }

  std::vector<ojson> on_token(const engine::TokenEvent& ev) override {
    count(ev);
    std::vector<ojson> chunks;
    add(output_.feed(ev.text), chunks);
    return chunks;
  }

  std::vector<ojson> on_done(const engine::GenerationResult& r) override {
    std::vector<ojson> chunks;
    add(output_.finish(), chunks);
    finish_ = finish_reason_of(r, output_.made_tool_calls());
    usage_ = usage(r);
    if (o_.stream) {
      chunks.push_back(chat_chunk_json(o_.meta, ojson::object(), finish_, take_pending(), o_.include_usage));
      if (o_.include_usage) chunks.push_back(chat_usage_chunk_json(o_.meta, usage_));
    }
    return chunks;
  }

  ojson whole() const override {
    return chat_completion_json(o_.meta, message_, finish_, usage_,
                                logprobs_on() ? chat_logprobs_json(all_logprobs_) : ojson(nullptr));
  }

 private:
  ojson take_pending() {
    if (!logprobs_on() || pending_logprobs_.empty()) return nullptr;
    ojson j = chat_logprobs_json(pending_logprobs_);
    pending_logprobs_.clear();
    return j;
  }

  void add(ChatDelta d, std::vector<ojson>& chunks) {
    if (d.empty()) return;
    if (o_.stream) {
      chunks.push_back(
          chat_chunk_json(o_.meta, chat_delta_json(d, message_.tool_calls.size()), std::nullopt, take_pending(),
                          o_.include_usage));
    }
    message_.append(std::move(d));
  }

  ChatOutput output_;
  ChatDelta message_;
};

class TextAssembler : public AssemblerBase {
 public:
  using AssemblerBase::AssemblerBase;

  std::vector<ojson> start_chunks() override { return {}; }

  std::vector<ojson> on_token(const engine::TokenEvent& ev) override {
    count(ev);
    std::vector<ojson> chunks;
    if (!ev.text.empty()) {
      if (o_.stream) chunks.push_back(text_chunk_json(o_.meta, ev.text, std::nullopt, take_pending(), o_.include_usage));
      text_ += ev.text;
    }
    return chunks;
  }

  std::vector<ojson> on_done(const engine::GenerationResult& r) override {
    finish_ = finish_reason_of(r, false);
    usage_ = usage(r);
    std::vector<ojson> chunks;
    if (o_.stream) {
      chunks.push_back(text_chunk_json(o_.meta, "", finish_, take_pending(), o_.include_usage));
      if (o_.include_usage) chunks.push_back(text_usage_chunk_json(o_.meta, usage_));
    }
    return chunks;
  }

  ojson whole() const override {
    return text_completion_json(o_.meta, text_, finish_, usage_,
                                logprobs_on() ? completion_logprobs_json(all_logprobs_, 0) : ojson(nullptr));
  }

 private:
  ojson take_pending() {
    if (!logprobs_on() || pending_logprobs_.empty()) return nullptr;
    ojson j = completion_logprobs_json(pending_logprobs_, sent_offset_);
    for (const auto& e : pending_logprobs_) sent_offset_ += e.token.size();
    pending_logprobs_.clear();
    return j;
  }

  std::string text_;
  size_t sent_offset_ = 0;
};

}  // namespace

std::unique_ptr<OutputAssembler> make_chat_assembler(const ServedModel& model, AssemblerOptions options,
                                                     ChatOutputOptions output) {
  return std::make_unique<ChatAssembler>(model, std::move(options), std::move(output));
}

std::unique_ptr<OutputAssembler> make_text_assembler(const ServedModel& model, AssemblerOptions options) {
  return std::make_unique<TextAssembler>(model, std::move(options));
}

}  // namespace ds4::server
