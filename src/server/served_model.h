// The model a server serves: weights, tokenizer and chat template of one model directory, its public id and
// context length, and how requests become prompt tokens (the chat template for chat, the tokenizer or raw
// ids for completions). Immutable once loaded and shared by every request thread.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/generator.h"
#include "models/model.h"
#include "server/chat_output.h"
#include "server/request.h"
#include "text/tokenizer.h"

namespace ds4::server {

// Renders a chat request (messages, tools, add_generation_prompt, template kwargs) to prompt text.
using ChatRenderer = std::function<std::string(const nlohmann::ordered_json& request)>;

struct ChatPrompt {
  std::vector<int32_t> tokens;
  std::string forced_prefix;         // text the server wrote at the start of the answer (a forced tool call)
  bool starts_in_reasoning = false;  // the prompt ends inside an open think block
};

class ServedModel {
 public:
  struct Parts {
    std::unique_ptr<Model> model;
    std::optional<text::Tokenizer> tokenizer;  // absent: token-id prompts only, no text
    ChatRenderer chat_renderer;                // absent: chat completions are refused
    std::string id;                            // the name clients use
    int64_t context = 0;                       // <= 0: the model's max_positions
    engine::SamplingParams sampling_defaults;  // for fields a request leaves out (generation_config.json)
  };
  explicit ServedModel(Parts parts);

  // Loads DIR (weights, tokenizer.json and the chat template when present, generation_config.json's
  // sampling defaults). `id` empty: the directory's name. Progress lines go to `log`.
  static std::unique_ptr<ServedModel> load(const std::string& dir, const std::string& id, int64_t context,
                                           const LogFn& log, const LoadOptions& options = {});

  const std::string& id() const { return id_; }
  int64_t context() const { return context_; }
  int64_t created() const { return created_; }
  const Model& model() const { return *model_; }
  const text::Tokenizer* tokenizer() const { return tokenizer_ ? &*tokenizer_ : nullptr; }
  const OutputFormat& output_format() const { return format_; }
  const engine::SamplingParams& sampling_defaults() const { return sampling_defaults_; }

  // Throw ApiError (400) when the request cannot be turned into a prompt.
  ChatPrompt chat_prompt(const ChatRequest& r) const;
  std::vector<int32_t> completion_prompt(const CompletionRequest& r) const;

  // A token's own text (for logprobs).
  std::string token_text(int32_t id) const;

  // engine::generate on this model.
  engine::GenerationResult generate(const engine::GenerationRequest& req, const engine::TokenCallback& cb) const;

 private:
  std::unique_ptr<Model> model_;
  std::optional<text::Tokenizer> tokenizer_;
  ChatRenderer render_;
  std::string id_;
  int64_t context_;
  int64_t created_;
  OutputFormat format_;
  engine::SamplingParams sampling_defaults_;
};

}  // namespace ds4::server
