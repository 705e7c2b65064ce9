#include "server/served_model.h"

#include <chrono>
#include <filesystem>

#include "engine/generation_defaults.h"
#include "server/api_error.h"
#include "server/tag_scanner.h"
#include "text/chat_template.h"

namespace ds4::server {
namespace {

// Qwen's markup, used when the vocabulary has the tags as tokens.
OutputFormat format_for(const std::optional<text::Tokenizer>& tok) {
  OutputFormat f;
  if (!tok) return f;
  auto has = [&](const char* t) { return tok->token_to_id(t).has_value(); };
  if (has("<think>") && has("</think>")) f.think_open = "<think>", f.think_close = "</think>";
  if (has("<tool_call>") && has("</tool_call>")) f.tool_open = "<tool_call>", f.tool_close = "</tool_call>";
  return f;
}

}  // namespace

ServedModel::ServedModel(Parts p)
    : model_(std::move(p.model)),
      tokenizer_(std::move(p.tokenizer)),
      render_(std::move(p.chat_renderer)),
      id_(std::move(p.id)),
      context_(p.context),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      format_(format_for(tokenizer_)),
      sampling_defaults_(p.sampling_defaults) {
  const int64_t max_pos = model_->info().max_positions;
  if (context_ <= 0 || (max_pos > 0 && context_ > max_pos)) context_ = max_pos > 0 ? max_pos : 4096;
}

std::unique_ptr<ServedModel> ServedModel::load(const std::string& dir, const std::string& id, int64_t context,
                                               const LogFn& log, const LoadOptions& options) {
  Parts p;
  p.model = load_model(dir, log, options);
  const std::string tok_path = dir + "/tokenizer.json";
  if (std::filesystem::exists(tok_path)) {
    p.tokenizer = text::Tokenizer::from_file(tok_path);
    if (log) log("tokenizer: " + tok_path + " (" + std::to_string(p.tokenizer->vocab_size()) + " ids)");
    const bool has_template = std::filesystem::exists(dir + "/chat_template.jinja") ||
                              std::filesystem::exists(dir + "/tokenizer_config.json");
    if (has_template) {
      try {
        auto tmpl = std::make_shared<text::ModelChatTemplate>(text::ModelChatTemplate::load(dir));
        p.chat_renderer = [tmpl](const nlohmann::ordered_json& request) { return tmpl->render(request); };
        if (log) log("chat template: " + tmpl->origin());
      } catch (const Error& e) {
        if (log) log(std::string("no chat template (chat completions disabled): ") + e.what());
      }
    }
  } else if (log) {
    log("no tokenizer.json: only /v1/completions with token-id prompts");
  }
  p.id = id.empty() ? std::filesystem::path(dir).lexically_normal().filename().string() : id;
  if (p.id.empty() || p.id == ".") p.id = std::filesystem::weakly_canonical(dir).filename().string();
  p.context = context;
  p.sampling_defaults = engine::generation_defaults(dir);
  return std::make_unique<ServedModel>(std::move(p));
}

ChatPrompt ServedModel::chat_prompt(const ChatRequest& r) const {
  if (!render_ || !tokenizer_)
    throw ApiError(400, "invalid_request_error",
                   "model '" + id_ + "' has no chat template: use /v1/completions", "messages", "no_chat_template");
  nlohmann::ordered_json request = nlohmann::ordered_json::object();
  request["messages"] = r.messages;
  const bool tools_on = r.tool_choice.mode != ToolChoiceMode::None && !r.tools.empty();
  if (tools_on) request["tools"] = r.tools;
  request["add_generation_prompt"] = true;
  for (const auto& [k, v] : r.template_kwargs.items())
    if (k != "messages" && k != "tools" && k != "add_generation_prompt") request[k] = v;

  ChatPrompt out;
  std::string text = render_(request);
  // A template that ends its generation prompt with an open think tag starts the answer in reasoning.
  if (!format_.think_open.empty()) {
    const std::string_view t(text);
    const std::string_view trimmed = t.substr(0, t.size() - trailing_space(t));
    out.starts_in_reasoning = trimmed.size() >= format_.think_open.size() &&
                              trimmed.substr(trimmed.size() - format_.think_open.size()) == format_.think_open;
  }
  // tool_choice "required" or a named function: the server writes the start of the call, so the model
  // can only complete it.
  if (tools_on && !format_.tool_open.empty() &&
      (r.tool_choice.mode == ToolChoiceMode::Required || r.tool_choice.mode == ToolChoiceMode::Function)) {
    if (out.starts_in_reasoning) out.forced_prefix = format_.think_close + "\n\n";
    out.forced_prefix += format_.tool_open + "\n";
    if (r.tool_choice.mode == ToolChoiceMode::Function)
      out.forced_prefix += "{\"name\": " + nlohmann::json(r.tool_choice.function).dump() + ", \"arguments\": ";
    text += out.forced_prefix;
  }
  out.tokens = tokenizer_->encode(text, false);
  return out;
}

std::vector<int32_t> ServedModel::completion_prompt(const CompletionRequest& r) const {
  if (auto* ids = std::get_if<std::vector<int32_t>>(&r.prompt)) {
    const int64_t V = model_->info().vocab_size;
    for (int32_t id : *ids)
      if (id >= V)
        throw invalid_request("prompt token " + std::to_string(id) + " is outside the vocabulary (size " +
                                  std::to_string(V) + ")",
                              "prompt", "invalid_value");
    return *ids;
  }
  if (!tokenizer_)
    throw invalid_request("model '" + id_ + "' has no tokenizer: give the prompt as token ids", "prompt",
                          "no_tokenizer");
  auto ids = tokenizer_->encode(std::get<std::string>(r.prompt), false);
  if (ids.empty()) throw invalid_request("'prompt' encodes to no tokens", "prompt", "invalid_value");
  return ids;
}

std::string ServedModel::token_text(int32_t id) const {
  if (!tokenizer_) return "<" + std::to_string(id) + ">";
  const int32_t one[1] = {id};
  return tokenizer_->decode(one, false);
}

engine::GenerationResult ServedModel::generate(const engine::GenerationRequest& req,
                                               const engine::TokenCallback& cb) const {
  return engine::generate(*model_, tokenizer(), req, cb);
}

}  // namespace ds4::server
