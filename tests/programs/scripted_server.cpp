// ds4_scripted_server: the real HTTP server over the test ScriptedModel, for the openai-client tests of
// behaviour random weights cannot produce (tool calls, reasoning, invalid logits, long streams).
//   ds4_scripted_server --model DIR --script FILE.json [--port 0] [--parallel N] [--max-queue N]
// DIR holds the test tokenizer and chat template (tools/make_test_model.py); FILE is a JSON array of
// {"trigger", "text", "repeat", "nan_at"} replies (see tests/support/scripted_model.h). Prints
// "listening on http://127.0.0.1:PORT" when ready; stops on SIGINT/SIGTERM.
#include <pthread.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "server/http_server.h"
#include "support/scripted_model.h"
#include "text/chat_template.h"

int main(int argc, char** argv) {
  std::string dir, script;
  ds4::server::ServerOptions o;
  o.port = 0;
  CLI::App app{"ds4 server over a scripted test model"};
  app.add_option("--model", dir, "Directory with the test tokenizer and chat template")->required();
  app.add_option("--script", script, "JSON array of scripted replies")->required();
  app.add_option("--port", o.port);
  app.add_option("--parallel", o.scheduler.workers);
  app.add_option("--max-queue", o.scheduler.max_queued);
  app.add_option("--max-body-bytes", o.max_body_bytes);
  app.add_option("--http-threads", o.http_threads);
  CLI11_PARSE(app, argc, argv);

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  std::ifstream f(script);
  const auto j = nlohmann::json::parse(f);
  std::vector<ds4::test::ScriptedReply> replies;
  for (const auto& r : j)
    replies.push_back({r.value("trigger", ""), r.value("text", ""), r.value("repeat", int64_t(1)),
                       r.value("nan_at", int64_t(-1)), nullptr});
  auto tok = ds4::text::Tokenizer::from_file(dir + "/tokenizer.json");
  auto tmpl = std::make_shared<ds4::text::ModelChatTemplate>(ds4::text::ModelChatTemplate::load(dir));
  ds4::server::ServedModel::Parts p;
  p.model = std::make_unique<ds4::test::ScriptedModel>(tok, replies);
  p.tokenizer = tok;
  p.chat_renderer = [tmpl](const nlohmann::ordered_json& r) { return tmpl->render(r); };
  p.id = "scripted";
  ds4::server::ServedModel model(std::move(p));

  ds4::server::HttpServer server(model, o);
  const int port = server.bind();
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    server.stop();
  });
  std::printf("listening on http://127.0.0.1:%d\n", port);
  std::fflush(stdout);
  server.run();
  pthread_kill(stopper.native_handle(), SIGTERM);
  stopper.join();
  return 0;
}
