#include "server/request.h"

#include <cmath>
#include <limits>
#include <cctype>
#include <set>

#include "server/api_error.h"

namespace ds4::server {
namespace {

using ojson = nlohmann::ordered_json;

// Refuses nesting deeper than kMaxJsonDepth before the parser sees the body: cheap, and it keeps every
// recursive walk after it (validation, the template, dump) bounded.
void check_depth(std::string_view body) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw invalid_request("request body nests JSON deeper than " + std::to_string(kMaxJsonDepth) + " levels", "",
                              "invalid_json");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

ojson parse_body(std::string_view body) {
  check_depth(body);
  ojson j;
  try {
    j = ojson::parse(body.begin(), body.end());
  } catch (const ojson::exception& e) {
    // parse_error, or out_of_range for a number too large for a double; nlohmann's message names the byte
    // offset and what it expected.
    throw invalid_request(std::string("malformed JSON in request body: ") + e.what(), "", "invalid_json");
  }
  if (!j.is_object()) throw invalid_request("request body must be a JSON object", "", "invalid_json");
  return j;
}

std::string type_of(const ojson& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return "integer";
  if (v.is_number_float()) return "number";
  return v.type_name();
}

ApiError wrong_type(const std::string& name, const std::string& want, const ojson& got) {
  return invalid_request("'" + name + "' must be " + want + ", got " + type_of(got), name, "invalid_type");
}

ApiError bad_value(const std::string& name, const std::string& why) {
  return invalid_request("'" + name + "' " + why, name, "invalid_value");
}

// Typed access to the top-level fields; an absent field and an explicit null both mean "not given", as in
// the OpenAI API.
class Fields {
 public:
  explicit Fields(const ojson& j) : j_(j) {}

  const ojson* get(const std::string& name) const {
    auto it = j_.find(name);
    if (it == j_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  bool has(const std::string& name) const { return get(name) != nullptr; }

  std::optional<std::string> string(const std::string& name) const {
    const ojson* v = get(name);
    if (!v) return std::nullopt;
    if (!v->is_string()) throw wrong_type(name, "a string", *v);
    return v->get<std::string>();
  }
  std::optional<bool> boolean(const std::string& name) const {
    const ojson* v = get(name);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) throw wrong_type(name, "a boolean", *v);
    return v->get<bool>();
  }
  std::optional<double> number(const std::string& name, double lo, double hi) const {
    const ojson* v = get(name);
    if (!v) return std::nullopt;
    if (!v->is_number()) throw wrong_type(name, "a number", *v);
    const double x = v->get<double>();
    if (!(x >= lo && x <= hi))
      throw bad_value(name, "must be between " + fmt(lo) + " and " + fmt(hi) + ", got " + fmt(x));
    return x;
  }
  std::optional<int64_t> integer(const std::string& name, int64_t lo, int64_t hi) const {
    const ojson* v = get(name);
    if (!v) return std::nullopt;
    if (v->is_number_unsigned()) {
      const uint64_t u = v->get<uint64_t>();
      if (u > uint64_t(hi) || (lo > 0 && u < uint64_t(lo)))
        throw bad_value(name, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " +
                                  std::to_string(u));
      return int64_t(u);
    }
    if (!v->is_number_integer()) throw wrong_type(name, "an integer", *v);
    const int64_t x = v->get<int64_t>();
    if (x < lo || x > hi)
      throw bad_value(name, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", got " +
                                std::to_string(x));
    return x;
  }

 private:
  static std::string fmt(double x) {
    std::string s = std::to_string(x);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }
  const ojson& j_;
};

// A field the server cannot honour: refusing it is better than silently ignoring what the client asked.
void refuse_if(bool present, const std::string& name, const std::string& why) {
  if (present) throw invalid_request("'" + name + "' is not supported: " + why, name, "unsupported_parameter");
}

std::vector<std::string> parse_stop(const Fields& f) {
  const ojson* v = f.get("stop");
  if (!v) return {};
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array()) throw wrong_type("stop", "a string or an array of strings", *v);
  if (v->size() > 4) throw bad_value("stop", "may hold at most 4 strings, got " + std::to_string(v->size()));
  std::vector<std::string> out;
  for (const auto& s : *v) {
    if (!s.is_string()) throw wrong_type("stop", "a string or an array of strings", s);
    out.push_back(s.get<std::string>());
  }
  return out;
}

// The fields both endpoints read the same way.
GenerationOptions parse_options(const Fields& f, const engine::SamplingParams& defaults) {
  GenerationOptions o;
  o.sampling = defaults;
  auto model = f.string("model");
  if (!model) throw invalid_request("'model' is required", "model", "missing_required_parameter");
  o.model = *model;

  auto mt = f.integer("max_tokens", 1, std::numeric_limits<int32_t>::max());
  auto mct = f.integer("max_completion_tokens", 1, std::numeric_limits<int32_t>::max());
  o.max_tokens = mct ? mct : mt;

  auto& s = o.sampling;
  if (auto t = f.number("temperature", 0, 2)) s.temperature = *t;
  if (auto p = f.number("top_p", 0, 1)) {
    if (*p <= 0) throw bad_value("top_p", "must be greater than 0");
    s.top_p = *p;
  }
  if (auto k = f.integer("top_k", -1, std::numeric_limits<int32_t>::max())) s.top_k = *k < 0 ? 0 : int(*k);
  if (auto m = f.number("min_p", 0, 1)) s.min_p = *m;
  if (auto p = f.number("presence_penalty", -2, 2)) s.presence_penalty = *p;
  if (auto p = f.number("frequency_penalty", -2, 2)) s.frequency_penalty = *p;
  if (auto r = f.number("repetition_penalty", 0, 1e9); r && *r != 1.0)
    refuse_if(true, "repetition_penalty", "use presence_penalty or frequency_penalty");

  if (const ojson* seed = f.get("seed")) {
    if (seed->is_number_unsigned()) o.seed = seed->get<uint64_t>();
    else if (seed->is_number_integer()) throw bad_value("seed", "must be a non-negative integer");
    else throw wrong_type("seed", "an integer", *seed);
  }
  o.stop = parse_stop(f);

  o.stream = f.boolean("stream").value_or(false);
  if (const ojson* so = f.get("stream_options")) {
    if (!so->is_object()) throw wrong_type("stream_options", "an object", *so);
    if (!o.stream) throw bad_value("stream_options", "is only allowed when 'stream' is true");
    Fields sf(*so);
    o.include_usage = sf.boolean("include_usage").value_or(false);
  }

  if (auto n = f.integer("n", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()); n && *n != 1)
    throw bad_value("n", "must be 1: this server generates one choice per request, got " + std::to_string(*n));
  if (const ojson* lb = f.get("logit_bias")) {
    if (!lb->is_object()) throw wrong_type("logit_bias", "an object", *lb);
    refuse_if(!lb->empty(), "logit_bias", "the sampler applies no logit bias");
  }
  if (const ojson* rf = f.get("response_format")) {
    if (!rf->is_object()) throw wrong_type("response_format", "an object", *rf);
    const auto t = rf->value("type", std::string("text"));
    refuse_if(t != "text", "response_format", "only {\"type\": \"text\"} is supported, got type '" + t + "'");
  }
  return o;
}

// Chat content: a string, null, or an array of text parts (joined with newlines).
ojson parse_content(const ojson& content, const std::string& where) {
  if (content.is_null() || content.is_string()) return content;
  if (!content.is_array()) throw wrong_type(where, "a string, null or an array of content parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const auto& part = content[i];
    const std::string p = where + "[" + std::to_string(i) + "]";
    if (!part.is_object()) throw wrong_type(p, "an object", part);
    auto t = part.find("type");
    if (t == part.end() || !t->is_string()) throw invalid_request("'" + p + ".type' must be a string", p);
    if (*t != "text")
      throw invalid_request("'" + p + "': content parts of type '" + t->get<std::string>() +
                                "' are not supported (this server takes text only)",
                            p, "unsupported_content");
    auto tx = part.find("text");
    if (tx == part.end() || !tx->is_string()) throw invalid_request("'" + p + ".text' must be a string", p);
    if (i) text += "\n";
    text += tx->get<std::string>();
  }
  return text;
}

ojson parse_tool_calls(const ojson& calls, const std::string& where) {
  if (!calls.is_array()) throw wrong_type(where, "an array", calls);
  ojson out = ojson::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const auto& c = calls[i];
    const std::string p = where + "[" + std::to_string(i) + "]";
    if (!c.is_object()) throw wrong_type(p, "an object", c);
    if (c.contains("type") && !(c["type"].is_string() && c["type"] == "function"))
      throw bad_value(p + ".type", "must be \"function\"");
    auto fn = c.find("function");
    if (fn == c.end() || !fn->is_object()) throw invalid_request("'" + p + ".function' must be an object", p);
    auto name = fn->find("name");
    if (name == fn->end() || !name->is_string()) throw invalid_request("'" + p + ".function.name' must be a string", p);
    auto args = fn->find("arguments");
    ojson arguments = "{}";
    if (args != fn->end() && !args->is_null()) {
      if (!args->is_string()) throw invalid_request("'" + p + ".function.arguments' must be a string", p);
      arguments = *args;
    }
    ojson call = ojson::object();
    if (auto id = c.find("id"); id != c.end() && !id->is_null()) {
      if (!id->is_string()) throw invalid_request("'" + p + ".id' must be a string", p);
      call["id"] = *id;
    }
    call["type"] = "function";
    call["function"] = {{"name", *name}, {"arguments", arguments}};
    out.push_back(std::move(call));
  }
  return out;
}

ojson parse_messages(const Fields& f) {
  const ojson* msgs = f.get("messages");
  if (!msgs) throw invalid_request("'messages' is required", "messages", "missing_required_parameter");
  if (!msgs->is_array()) throw wrong_type("messages", "an array", *msgs);
  if (msgs->empty()) throw bad_value("messages", "must hold at least one message");
  static const std::set<std::string> roles = {"system", "developer", "user", "assistant", "tool"};
  ojson out = ojson::array();
  for (size_t i = 0; i < msgs->size(); ++i) {
    const auto& m = (*msgs)[i];
    const std::string p = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw wrong_type(p, "an object", m);
    auto role_it = m.find("role");
    if (role_it == m.end() || !role_it->is_string())
      throw invalid_request("'" + p + ".role' must be a string", p + ".role", "invalid_type");
    std::string role = *role_it;
    if (!roles.count(role))
      throw invalid_request("'" + p + ".role' must be one of system, developer, user, assistant, tool; got '" + role +
                                "'",
                            p + ".role", "invalid_value");
    ojson msg = ojson::object();
    msg["role"] = role == "developer" ? "system" : role;
    auto content_it = m.find("content");
    const bool has_calls = m.contains("tool_calls") && !m["tool_calls"].is_null();
    if (content_it == m.end() || content_it->is_null()) {
      if (role != "assistant")  // an assistant turn may be tool calls only
        throw invalid_request("'" + p + ".content' is required for role '" + role + "'", p + ".content",
                              "missing_required_parameter");
      msg["content"] = nullptr;
    } else {
      msg["content"] = parse_content(*content_it, p + ".content");
    }
    if (role == "assistant") {
      if (has_calls) msg["tool_calls"] = parse_tool_calls(m["tool_calls"], p + ".tool_calls");
      if (auto rc = m.find("reasoning_content"); rc != m.end() && !rc->is_null()) {
        if (!rc->is_string()) throw wrong_type(p + ".reasoning_content", "a string", *rc);
        msg["reasoning_content"] = *rc;
      }
    }
    if (role == "tool") {
      auto id = m.find("tool_call_id");
      if (id == m.end() || !id->is_string())
        throw invalid_request("'" + p + ".tool_call_id' must be a string", p + ".tool_call_id",
                              "missing_required_parameter");
      msg["tool_call_id"] = *id;
    }
    if (auto name = m.find("name"); name != m.end() && !name->is_null()) {
      if (!name->is_string()) throw wrong_type(p + ".name", "a string", *name);
      msg["name"] = *name;
    }
    out.push_back(std::move(msg));
  }
  return out;
}

// OpenAI's rule for function names: 1 to 64 of [A-Za-z0-9_-].
bool valid_function_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (unsigned char c : n)
    if (!std::isalnum(c) && c != '_' && c != '-') return false;
  return true;
}

ojson parse_tools(const Fields& f) {
  refuse_if(f.has("functions"), "functions", "use 'tools'");
  refuse_if(f.has("function_call"), "function_call", "use 'tool_choice'");
  const ojson* tools = f.get("tools");
  if (!tools) return ojson::array();
  if (!tools->is_array()) throw wrong_type("tools", "an array", *tools);
  std::set<std::string> names;
  ojson out = ojson::array();
  for (size_t i = 0; i < tools->size(); ++i) {
    const auto& t = (*tools)[i];
    const std::string p = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) throw wrong_type(p, "an object", t);
    auto type = t.find("type");
    if (type == t.end() || !type->is_string() || *type != "function")
      throw invalid_request("'" + p + ".type' must be \"function\"", p + ".type", "invalid_value");
    auto fn = t.find("function");
    if (fn == t.end() || !fn->is_object())
      throw invalid_request("'" + p + ".function' must be an object", p + ".function", "invalid_type");
    auto name = fn->find("name");
    if (name == fn->end() || !name->is_string())
      throw invalid_request("'" + p + ".function.name' must be a string", p + ".function.name", "invalid_type");
    const std::string n = *name;
    if (!valid_function_name(n))
      throw invalid_request("'" + p + ".function.name' must be 1 to 64 letters, digits, '_' or '-', got '" + n + "'",
                            p + ".function.name", "invalid_value");
    if (!names.insert(n).second)
      throw invalid_request("tool name '" + n + "' is defined twice", p + ".function.name", "invalid_value");
    ojson function = ojson::object();
    function["name"] = n;
    if (auto d = fn->find("description"); d != fn->end() && !d->is_null()) {
      if (!d->is_string()) throw wrong_type(p + ".function.description", "a string", *d);
      function["description"] = *d;
    }
    if (auto params = fn->find("parameters"); params != fn->end() && !params->is_null()) {
      if (!params->is_object()) throw wrong_type(p + ".function.parameters", "an object", *params);
      function["parameters"] = *params;
    }
    out.push_back({{"type", "function"}, {"function", function}});
  }
  return out;
}

ToolChoice parse_tool_choice(const Fields& f, const ojson& tools) {
  const ojson* v = f.get("tool_choice");
  ToolChoice tc;
  if (!v) {
    tc.mode = tools.empty() ? ToolChoiceMode::None : ToolChoiceMode::Auto;
    return tc;
  }
  if (v->is_string()) {
    const std::string s = *v;
    if (s == "none") tc.mode = ToolChoiceMode::None;
    else if (s == "auto") tc.mode = ToolChoiceMode::Auto;
    else if (s == "required") tc.mode = ToolChoiceMode::Required;
    else throw bad_value("tool_choice", "must be \"none\", \"auto\", \"required\" or a named function, got '" + s + "'");
  } else if (v->is_object()) {
    auto fn = v->find("function");
    auto type = v->find("type");
    if (type == v->end() || *type != "function" || fn == v->end() || !fn->is_object() || !fn->contains("name") ||
        !(*fn)["name"].is_string())
      throw bad_value("tool_choice", "must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
    tc.mode = ToolChoiceMode::Function;
    tc.function = (*fn)["name"];
  } else {
    throw wrong_type("tool_choice", "a string or an object", *v);
  }
  if (tc.mode != ToolChoiceMode::None && tools.empty())
    throw bad_value("tool_choice", "is only allowed when 'tools' are given");
  if (tc.mode == ToolChoiceMode::Function) {
    bool found = false;
    for (const auto& t : tools) found = found || t["function"]["name"] == tc.function;
    if (!found) throw bad_value("tool_choice", "names function '" + tc.function + "', which is not in 'tools'");
  }
  return tc;
}

}  // namespace

ChatRequest parse_chat_request(std::string_view body, const engine::SamplingParams& defaults) {
  const ojson j = parse_body(body);
  Fields f(j);
  ChatRequest r;
  r.options = parse_options(f, defaults);
  r.messages = parse_messages(f);
  r.tools = parse_tools(f);
  r.tool_choice = parse_tool_choice(f, r.tools);
  f.boolean("parallel_tool_calls");  // type-checked; every call the model makes is returned
  if (f.boolean("logprobs").value_or(false)) r.options.top_logprobs = 0;
  if (auto n = f.integer("top_logprobs", 0, 20)) {
    if (r.options.top_logprobs < 0) throw bad_value("top_logprobs", "requires 'logprobs' to be true");
    r.options.top_logprobs = int(*n);
  }
  if (const ojson* mod = f.get("modalities")) {
    if (!mod->is_array()) throw wrong_type("modalities", "an array", *mod);
    for (const auto& m : *mod) refuse_if(m != "text", "modalities", "this server produces text only");
  }
  refuse_if(f.has("audio"), "audio", "this server produces text only");
  if (const ojson* kw = f.get("chat_template_kwargs")) {
    if (!kw->is_object()) throw wrong_type("chat_template_kwargs", "an object", *kw);
    r.template_kwargs = *kw;
  }
  return r;
}

CompletionRequest parse_completion_request(std::string_view body, const engine::SamplingParams& defaults) {
  const ojson j = parse_body(body);
  Fields f(j);
  CompletionRequest r;
  r.options = parse_options(f, defaults);
  // The legacy endpoint defaults to 16 tokens.
  if (!r.options.max_tokens) r.options.max_tokens = 16;
  if (auto lp = f.integer("logprobs", 0, 20)) r.options.top_logprobs = int(*lp);
  if (auto b = f.integer("best_of", 1, 1 << 20); b && *b != 1)
    throw bad_value("best_of", "must be 1: this server generates one choice per request");
  refuse_if(f.boolean("echo").value_or(false), "echo", "the prompt is not echoed back");
  refuse_if(f.has("suffix"), "suffix", "insertion is not supported");

  const ojson* p = f.get("prompt");
  if (!p) throw invalid_request("'prompt' is required", "prompt", "missing_required_parameter");
  auto token_list = [](const ojson& a) {
    std::vector<int32_t> ids;
    for (const auto& t : a) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > std::numeric_limits<int32_t>::max())
        throw bad_value("prompt", "token arrays must hold non-negative integer token ids");
      ids.push_back(int32_t(t.get<int64_t>()));
    }
    return ids;
  };
  if (p->is_string()) {
    r.prompt = p->get<std::string>();
  } else if (p->is_array()) {
    if (p->empty()) throw bad_value("prompt", "must not be empty");
    const auto& first = (*p)[0];
    if (first.is_string() || first.is_array()) {
      if (p->size() != 1) throw bad_value("prompt", "must be a single prompt: this server generates one choice per request");
      if (first.is_string()) r.prompt = first.get<std::string>();
      else r.prompt = token_list(first);
    } else {
      r.prompt = token_list(*p);
    }
  } else {
    throw wrong_type("prompt", "a string, an array of token ids, or an array holding one of those", *p);
  }
  if (auto* ids = std::get_if<std::vector<int32_t>>(&r.prompt); ids && ids->empty())
    throw bad_value("prompt", "must not be empty");
  return r;
}

}  // namespace ds4::server
