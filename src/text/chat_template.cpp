#include "text/chat_template.h"

#include <algorithm>
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
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::object(std::make_shared<jinja::BigInt>(std::to_string(u)));
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

std::string ChatTemplate::render(const nlohmann::ordered_json& context) const { return render({&context}); }

std::string ChatTemplate::render(std::initializer_list<const nlohmann::ordered_json*> layers,
                                 const std::vector<std::string>& skip) const {
  if (!ast_) throw Error(ErrorKind::Template, "no chat template was parsed");
  jinja::DictData vars;
  for (const json* layer : layers) {
    if (!layer->is_object()) throw Error(ErrorKind::InvalidArgument, "template context must be a JSON object");
    for (const auto& [k, v] : layer->items())
      if (std::find(skip.begin(), skip.end(), k) == skip.end()) vars.set(Value(k), to_value(v));
  }
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
      m.named_templates_ = true;
      for (const auto& entry : ct) {
        if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") ||
            !entry["name"].is_string() || !entry["template"].is_string())
          throw Error(ErrorKind::Format, m.origin_ + ": chat_template list entries must be {\"name\", \"template\"} strings");
        std::string name = entry["name"].get<std::string>();
        m.templates_.insert_or_assign(name, parse_named(entry["template"].get<std::string>(), m.origin_ + " (" + name + ")"));
      }
    } else {
      throw Error(ErrorKind::Format, m.origin_ + ": chat_template must be a string or a list of named templates");
    }
  }
  // Named templates saved as additional_chat_templates/NAME.jinja (transformers' CHAT_TEMPLATE_DIR).
  fs::path extra_dir = dir / "additional_chat_templates";
  if (fs::is_directory(extra_dir)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(extra_dir))
      if (e.is_regular_file() && e.path().extension() == ".jinja") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      m.named_templates_ = true;
      if (m.origin_.empty()) m.origin_ = extra_dir.string();
      m.templates_.insert_or_assign(f.stem().string(), parse_named(read_file(f), f.string()));
    }
  }
  if (m.templates_.empty())
    throw Error(ErrorKind::Io, "no chat template in " + model_dir +
                                   " (expected chat_template.jinja or \"chat_template\" in tokenizer_config.json)");

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

const ChatTemplate& ModelChatTemplate::get(const std::string& name) const {
  auto it = templates_.find(name);
  if (it == templates_.end()) {
    std::string names;
    for (const auto& [n, _] : templates_) names += (names.empty() ? "" : ", ") + n;
    throw Error(ErrorKind::Template, origin_ + " has no chat template named '" + name + "' (available: " + names + ")");
  }
  return it->second;
}

}  // namespace ds4::text
