#include "text/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "text/jinja/interpreter.h"
#include "text/jinja/parser.h"

namespace ds4::text {

namespace {

using json = nlohmann::ordered_json;
using jinja::Value;

Value to_value(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return Value::none();
    case json::value_t::boolean: return Value(j.get<bool>());
    case json::value_t::number_integer: return Value(j.get<int64_t>());
    case json::value_t::number_unsigned: {
      auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX))
        throw Error(ErrorKind::Unsupported, "integer " + std::to_string(u) + " in the template context exceeds 64 bits");
      return Value(static_cast<int64_t>(u));
    }
    case json::value_t::number_float: return Value(j.get<double>());
    case json::value_t::string: return Value(j.get<std::string>());
    case json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(to_value(e));
      return Value::list(std::move(items));
    }
    case json::value_t::object: {
      jinja::DictData d;
      for (const auto& [k, v] : j.items()) d.set(Value(k), to_value(v));
      return Value::dict(std::move(d));
    }
    default: throw Error(ErrorKind::Format, "unsupported JSON value in the template context");
  }
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw Error(ErrorKind::Io, "cannot open " + p.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

json read_json(const std::filesystem::path& p) {
  try {
    return json::parse(read_file(p));
  } catch (const json::exception& e) {
    throw Error(ErrorKind::Format, p.string() + ": invalid JSON: " + e.what());
  }
}

// A special token in tokenizer_config.json: a string, or an AddedToken object {"content": ...}.
std::optional<std::string> token_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return std::nullopt;
}

ChatTemplate parse_named(const std::string& source, const std::string& origin) {
  try {
    return ChatTemplate::parse(source);
  } catch (const Error& e) {
    throw Error(ErrorKind::Template, origin + ": " + e.what());
  }
}

}  // namespace

ChatTemplate ChatTemplate::parse(const std::string& source) {
  ChatTemplate t;
  t.source_ = source;
  t.ast_ = jinja::parse_template(source);
  return t;
}

std::string ChatTemplate::render(const nlohmann::ordered_json& context) const {
  if (!context.is_object()) throw Error(ErrorKind::InvalidArgument, "template context must be a JSON object");
  jinja::DictData vars;
  for (const auto& [k, v] : context.items()) vars.set(Value(k), to_value(v));
  jinja::Interpreter interpreter(*ast_);
  return interpreter.render(vars);
}

ModelChatTemplate ModelChatTemplate::load(const std::string& model_dir) {
  namespace fs = std::filesystem;
  ModelChatTemplate m;
  fs::path dir(model_dir);
  fs::path config_path = dir / "tokenizer_config.json";
  json config = json::object();
  if (fs::exists(config_path)) config = read_json(config_path);
  if (!config.is_object()) throw Error(ErrorKind::Format, config_path.string() + ": expected a JSON object");

  fs::path jinja_path = dir / "chat_template.jinja";
  if (fs::exists(jinja_path)) {
    m.origin_ = jinja_path.string();
    m.templates_.emplace("default", parse_named(read_file(jinja_path), m.origin_));
  } else if (config.contains("chat_template") && !config["chat_template"].is_null()) {
    m.origin_ = config_path.string();
    const json& ct = config["chat_template"];
    if (ct.is_string()) {
      m.templates_.emplace("default", parse_named(ct.get<std::string>(), m.origin_));
    } else if (ct.is_array()) {
      for (const auto& entry : ct) {
        if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") ||
            !entry["name"].is_string() || !entry["template"].is_string())
          throw Error(ErrorKind::Format, m.origin_ + ": chat_template list entries must be {\"name\", \"template\"} strings");
        std::string name = entry["name"].get<std::string>();
        m.templates_.emplace(name, parse_named(entry["template"].get<std::string>(), m.origin_ + " (" + name + ")"));
      }
    } else {
      throw Error(ErrorKind::Format, m.origin_ + ": chat_template must be a string or a list of named templates");
    }
  } else {
    throw Error(ErrorKind::Io, "no chat template in " + model_dir +
                                   " (expected chat_template.jinja or \"chat_template\" in tokenizer_config.json)");
  }

  // transformers 5 (PreTrainedTokenizerBase.special_tokens_map): the named special tokens that are set,
  // then any other "*_token" entry holding a token (model-specific special tokens).
  static const char* kNamed[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                 "pad_token", "cls_token", "mask_token"};
  for (const char* name : kNamed) {
    if (!config.contains(name)) continue;
    if (auto t = token_text(config[name])) m.special_tokens_[name] = *t;
  }
  for (const auto& [key, value] : config.items()) {
    if (key.size() < 6 || key.compare(key.size() - 6, 6, "_token") != 0) continue;
    if (m.special_tokens_.contains(key)) continue;
    bool named = false;
    for (const char* n : kNamed) named |= key == n;
    if (named) continue;
    if (auto t = token_text(value)) m.special_tokens_[key] = *t;
  }
  if (config.contains("extra_special_tokens") && config["extra_special_tokens"].is_object()) {
    for (const auto& [key, value] : config["extra_special_tokens"].items())
      if (auto t = token_text(value)) m.special_tokens_[key] = *t;
  }
  return m;
}

nlohmann::ordered_json ModelChatTemplate::context(const nlohmann::ordered_json& request) const {
  if (!request.is_object()) throw Error(ErrorKind::InvalidArgument, "the render request must be a JSON object");
  json ctx = special_tokens_;
  ctx["tools"] = nullptr;
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = false;
  for (const auto& [k, v] : request.items()) ctx[k] = v;
  return ctx;
}

const ChatTemplate& ModelChatTemplate::get(const std::string& name) const {
  auto it = templates_.find(name);
  if (it == templates_.end()) {
    std::string names;
    for (const auto& [n, _] : templates_) names += (names.empty() ? "" : ", ") + n;
    throw Error(ErrorKind::Template, origin_ + " has no chat template named '" + name + "' (available: " + names + ")");
  }
  return it->second;
}

std::string ModelChatTemplate::render(const nlohmann::ordered_json& request) const {
  json ctx = context(request);
  std::string name = "default";
  if (templates_.size() > 1 && !ctx["tools"].is_null() && templates_.count("tool_use")) name = "tool_use";
  return get(name).render(ctx);
}

}  // namespace ds4::text
