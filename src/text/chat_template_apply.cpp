// What transformers' apply_chat_template(messages, tokenize=False, **kwargs) does around the template
// itself: which template, which variables, and continue_final_message (ending the prompt inside the last
// message so that generation continues it).
#include <algorithm>

#include "core/error.h"
#include "text/chat_template.h"
#include "text/jinja/pystr.h"

namespace ds4::text {

namespace {

using json = nlohmann::ordered_json;

// apply_chat_template's own parameters: never template variables.
const std::vector<std::string>& own_arguments() {
  static const std::vector<std::string> names = {
      "chat_template", "continue_final_message", "tokenize", "padding", "truncation", "max_length",
      "return_tensors", "return_dict", "return_assistant_tokens_mask", "tokenizer_kwargs"};
  return names;
}

// Python truthiness of a JSON value.
bool truthy(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return false;
    case json::value_t::boolean: return v.get<bool>();
    case json::value_t::number_integer: return v.get<int64_t>() != 0;
    case json::value_t::number_unsigned: return v.get<uint64_t>() != 0;
    case json::value_t::number_float: return v.get<double>() != 0.0;
    case json::value_t::string: return !v.get<std::string>().empty();
    case json::value_t::array:
    case json::value_t::object: return !v.empty();
    default: return true;
  }
}

const char kContinueTag[] = "CONTINUE_FINAL_MESSAGE_TAG ";

[[noreturn]] void invalid(const std::string& msg) { throw Error(ErrorKind::InvalidArgument, msg); }

std::string strip(const std::string& s) { return jinja::pystr::strip(s, std::nullopt, true, true); }

}  // namespace

nlohmann::ordered_json ModelChatTemplate::base_context() const {
  json ctx = special_tokens_;
  ctx["tools"] = nullptr;
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = false;
  return ctx;
}

nlohmann::ordered_json ModelChatTemplate::context(const nlohmann::ordered_json& request) const {
  if (!request.is_object()) invalid("the render request must be a JSON object");
  json ctx = base_context();
  const auto& skip = own_arguments();
  for (const auto& [k, v] : request.items())
    if (std::find(skip.begin(), skip.end(), k) == skip.end()) ctx[k] = v;
  return ctx;
}

std::string ModelChatTemplate::render(const nlohmann::ordered_json& request) const {
  if (!request.is_object()) invalid("the render request must be a JSON object");
  // Refused before any template is chosen, even one that would render zero messages.
  if (request.contains("messages") && request["messages"].is_array() && request["messages"].empty())
    invalid("Cannot apply chat template to an empty conversation. Provide at least one message.");

  // get_chat_template: a name among several templates, or else a template given in the request itself.
  std::optional<ChatTemplate> inline_template;
  const ChatTemplate* tmpl = nullptr;
  if (request.contains("chat_template") && !request["chat_template"].is_null()) {
    if (!request["chat_template"].is_string()) invalid("\"chat_template\" must be a template name or source");
    const std::string requested = request["chat_template"].get<std::string>();
    if (named_templates_ && templates_.count(requested)) {
      tmpl = &templates_.at(requested);
    } else {
      inline_template = ChatTemplate::parse(requested);
      tmpl = &*inline_template;
    }
  } else {
    bool has_tools = request.contains("tools") && !request["tools"].is_null();
    std::string name = has_tools && named_templates_ && templates_.count("tool_use") ? "tool_use" : "default";
    if (!templates_.count(name))
      throw Error(ErrorKind::Template, origin_ + " has several chat templates and none is named 'default'");
    tmpl = &templates_.at(name);
  }

  json base = base_context();
  const json* cfm = request.contains("continue_final_message") ? &request["continue_final_message"] : nullptr;
  if (!cfm || !truthy(*cfm)) return tmpl->render({&base, &request}, own_arguments());

  // continue_final_message: mark the end of the last message's text, render, and cut the prompt there.
  if (request.contains("add_generation_prompt") && truthy(request["add_generation_prompt"]))
    invalid("continue_final_message and add_generation_prompt are not compatible. Use continue_final_message when "
            "you want the model to continue the final message, and add_generation_prompt when you want to add a "
            "header that will prompt it to start a new assistant message instead.");
  const std::string field = cfm->is_string() ? cfm->get<std::string>() : "content";
  if (!request.contains("messages") || !request["messages"].is_array() || request["messages"].empty())
    invalid("continue_final_message is set but there are no messages");
  json messages = request["messages"];
  json& last = messages.back();
  if (!last.is_object() || !last.contains(field) || last[field].is_null())
    invalid("continue_final_message is set but the final message has no \"" + field + "\" to continue!");
  if (tmpl->source().find(field) == std::string::npos)
    invalid("continue_final_message is set to \"" + field + "\" but this is not an accepted field in the chat_template");
  std::string final_text;
  json& target = last[field];
  if (target.is_array()) {
    bool found = false;
    for (auto it = target.rbegin(); it != target.rend(); ++it) {
      if (it->is_object() && it->contains("text") && (*it)["text"].is_string()) {
        final_text = (*it)["text"].get<std::string>();
        (*it)["text"] = final_text + kContinueTag;
        found = true;
        break;
      }
    }
    if (!found) invalid("continue_final_message is set but we could not find any text to continue in the final message!");
  } else if (target.is_string()) {
    final_text = target.get<std::string>();
    target = final_text + kContinueTag;
  } else {
    invalid("continue_final_message needs the final message's \"" + field + "\" to be text");
  }
  json override = {{"messages", std::move(messages)}};
  std::string rendered = tmpl->render({&base, &request, &override}, own_arguments());
  const std::string tag = kContinueTag;
  const std::string tag_stripped = strip(tag);
  if (rendered.find(strip(final_text)) == std::string::npos || rendered.find(tag_stripped) == std::string::npos)
    invalid("continue_final_message is set but the final message does not appear in the chat after applying the "
            "chat template! This can happen if the chat template deletes portions of the final message.");
  size_t at = rendered.rfind(tag_stripped);
  if (rendered.compare(at, tag.size(), tag) == 0) return rendered.substr(0, at);
  // The template trimmed the space after the tag: cut more cautiously.
  return jinja::pystr::strip(rendered.substr(0, at), std::nullopt, false, true);
}

}  // namespace ds4::text
