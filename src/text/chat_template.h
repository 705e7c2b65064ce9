// Chat templates: a model's Jinja template rendered to a prompt byte for byte as transformers renders it
// (Jinja2 ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols, its own tojson,
// raise_exception, strftime_now), and the loading of the template and special tokens from a model
// directory.
#pragma once
#include <initializer_list>
#include <map>
#include <memory>
#include <vector>
#include <nlohmann/json.hpp>
#include <optional>
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
  // The same with the variables of several JSON objects, later ones overriding earlier ones, leaving out
  // the keys in `skip` (no copy of the objects is made).
  std::string render(std::initializer_list<const nlohmann::ordered_json*> layers,
                     const std::vector<std::string>& skip = {}) const;
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const jinja::TemplateAst> ast_;
};

// A model's chat template(s) and the special tokens transformers puts in the template's scope.
class ModelChatTemplate {
 public:
  // DIR/chat_template.jinja if present, else tokenizer_config.json "chat_template" (a string, or a list of
  // {name, template}), plus named templates in DIR/additional_chat_templates/NAME.jinja. Special tokens
  // come from tokenizer_config.json (strings or {"content": ...}).
  static ModelChatTemplate load(const std::string& model_dir);

  // The variables transformers' apply_chat_template passes: the special tokens, then tools=None,
  // documents=None, add_generation_prompt=False, then every key of `request` (messages, tools, ...)
  // except apply_chat_template's own arguments (chat_template, continue_final_message, tokenize, ...).
  nlohmann::ordered_json context(const nlohmann::ordered_json& request) const;
  // Renders a request as apply_chat_template(tokenize=False) does: the template named by "chat_template"
  // (or that string itself as a template), else "tool_use" when tools are given and it exists, else
  // "default"; with "continue_final_message" (true, or the name of the field to continue) the prompt
  // ends inside the last message instead of closing it. An empty "messages" array is refused, as
  // transformers refuses it (ds4::Error InvalidArgument).
  std::string render(const nlohmann::ordered_json& request) const;

  const ChatTemplate& get(const std::string& name) const;
  // The variables under the request's: the special tokens and the defaults of apply_chat_template.
  nlohmann::ordered_json base_context() const;
  const nlohmann::ordered_json& special_tokens() const { return special_tokens_; }
  const std::string& origin() const { return origin_; }

 private:
  std::map<std::string, ChatTemplate> templates_;  // "default" for a single template
  bool named_templates_ = false;  // several named templates (a list, or additional_chat_templates/)
  nlohmann::ordered_json special_tokens_ = nlohmann::ordered_json::object();
  std::string origin_;  // the file the template came from, for messages
};

}  // namespace ds4::text
