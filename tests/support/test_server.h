// An in-process server over a ScriptedModel (or any served model) on a free loopback port, with helpers to
// call it and to read server-sent event streams.
#pragma once
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "server/http_server.h"
#include "support/scripted_model.h"
#include "support/test_model_dir.h"
#include "text/chat_template.h"

namespace ds4::test {

using json = nlohmann::json;

// The test tokenizer and chat template (tools/make_test_model.py).
inline const text::Tokenizer& test_tokenizer() {
  static const text::Tokenizer tok = text::Tokenizer::from_file(test_model_dir() + "/tokenizer.json");
  return tok;
}

inline server::ChatRenderer test_renderer() {
  auto tmpl = std::make_shared<text::ModelChatTemplate>(text::ModelChatTemplate::load(test_model_dir()));
  return [tmpl](const nlohmann::ordered_json& r) { return tmpl->render(r); };
}

class TestServer {
 public:
  explicit TestServer(std::vector<ScriptedReply> replies, server::ServerOptions o = {}, int64_t context = 0) {
    auto m = std::make_unique<ScriptedModel>(test_tokenizer(), std::move(replies));
    scripted_ = m.get();
    server::ServedModel::Parts p;
    p.model = std::move(m);
    p.tokenizer = test_tokenizer();
    p.chat_renderer = test_renderer();
    p.id = "scripted";
    p.context = context;
    start(std::make_unique<server::ServedModel>(std::move(p)), o);
  }
  // Serves a model directory (real weights) under the id "test-model".
  static std::unique_ptr<TestServer> for_model_dir(const std::string& dir, server::ServerOptions o = {}) {
    std::unique_ptr<TestServer> t(new TestServer());
    t->start(server::ServedModel::load(dir, "test-model", 0, nullptr), o);
    return t;
  }
  ~TestServer() {
    server_->stop();
    thread_.join();
  }

  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    return c;
  }
  // POSTs a JSON body; returns status and parsed body (null when the body is not JSON).
  std::pair<int, json> post(const std::string& path, const std::string& body) const {
    auto res = client().Post(path, body, "application/json");
    if (!res) return {0, nullptr};
    return {res->status, json::parse(res->body, nullptr, false)};
  }
  std::pair<int, json> post(const std::string& path, const json& body) const { return post(path, body.dump()); }
  int port() const { return port_; }
  server::HttpServer& server() { return *server_; }
  const server::ServedModel& model() const { return *model_; }
  ScriptedModel* scripted() const { return scripted_; }

 private:
  TestServer() = default;
  void start(std::unique_ptr<server::ServedModel> m, server::ServerOptions o) {
    model_ = std::move(m);
    o.host = "127.0.0.1";
    o.port = 0;
    server_ = std::make_unique<server::HttpServer>(*model_, o);
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->run(); });
  }
  std::unique_ptr<server::ServedModel> model_;
  std::unique_ptr<server::HttpServer> server_;
  ScriptedModel* scripted_ = nullptr;
  std::thread thread_;
  int port_ = 0;
};

// The data payloads of an SSE body, in order ("[DONE]" included as a string).
inline std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    const std::string event = body.substr(pos, end - pos);
    if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
    pos = end + 2;
  }
  return out;
}

// A chat request body for the scripted server.
inline json chat_body(const std::string& user, json extra = json::object()) {
  json b = {{"model", "scripted"}, {"messages", json::array({{{"role", "user"}, {"content", user}}})}};
  for (auto& [k, v] : extra.items()) b[k] = v;
  return b;
}

// The value of an unlabelled sample in Prometheus text, or -1.
inline double metric(const std::string& text, const std::string& name) {
  size_t p = 0;
  while ((p = text.find(name + " ", p)) != std::string::npos) {
    if (p == 0 || text[p - 1] == '\n') return std::stod(text.substr(p + name.size() + 1));
    p += name.size();
  }
  return -1;
}

}  // namespace ds4::test
