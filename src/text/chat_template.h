// Chat templates: a model's Jinja template rendered to a prompt byte for byte as transformers renders it
// (Jinja2 ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, its own tojson,
// raise_exception, strftime_now), and the loading of the template and special tokens from a model
// directory.
#pragma once
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace ds4::text {

namespace jinja {
struct TemplateAst;
}

class ChatTemplate {
 public:
  // Throws a Template error on syntax errors and unknown filters/tests (where Jinja2 reports them at
  // compile time).
  static ChatTemplate parse(const std::string& source);
  // Every key of `context` becomes a template variable. Throws a Template error (raise_exception's
  // message, undefined attribute access, type errors, ...) naming the template line.
  std::string render(const nlohmann::ordered_json& context) const;
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const jinja::TemplateAst> ast_;
};

// A model's chat template(s) and the special tokens transformers puts in the template's scope.
class ModelChatTemplate {
 public:
  // DIR/chat_template.jinja if present, else tokenizer_config.json "chat_template" (a string, or a list of
  // {name, template}). Special tokens come from tokenizer_config.json (strings or {"content": ...}).
  static ModelChatTemplate load(const std::string& model_dir);

  // The variables transformers' apply_chat_template passes: the special tokens, then tools=None,
  // documents=None, add_generation_prompt=False, then every key of `request` (messages, tools, ...).
  nlohmann::ordered_json context(const nlohmann::ordered_json& request) const;
  // Renders a request; with several named templates, "tool_use" is chosen when tools are given.
  std::string render(const nlohmann::ordered_json& request) const;

  const ChatTemplate& get(const std::string& name) const;
  const nlohmann::ordered_json& special_tokens() const { return special_tokens_; }
  const std::string& origin() const { return origin_; }

 private:
  std::map<std::string, ChatTemplate> templates_;  // "default" for a single template
  nlohmann::ordered_json special_tokens_ = nlohmann::ordered_json::object();
  std::string origin_;  // the file the template came from, for messages
};

}  // namespace ds4::text
