// ds4 serve [--model DIR] [--host 127.0.0.1] [--port 8080] ...: the OpenAI-compatible HTTP server.
// Without --model it serves the default model shipped in the repository (cli/default_model.h). Prints "listening on http://HOST:PORT" once it accepts
// connections (with --port 0 the port is chosen freely); SIGINT/SIGTERM stop it cleanly.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "cli/command.h"
#include "cli/default_model.h"
#include "core/error.h"
#include "server/http_server.h"
#include "server/served_model.h"

namespace {

struct Args {
  std::string model, name, host = "127.0.0.1", backend = "cpu";
  int port = 8080;
  int64_t context = 0;
  int parallel = 1;
  size_t max_queue = 64;
  size_t max_body_bytes = 8u << 20;
  int http_threads = 64;
  bool speculative = false;
};

// Loading can take a while: on a terminal, a status line counts the seconds until the model is ready;
// the loader's messages print above it. Elsewhere (logs, tests) only the messages print.
class LoadProgress {
 public:
  explicit LoadProgress(std::string what) : what_(std::move(what)), tty_(::isatty(STDERR_FILENO)) {
    start_ = std::chrono::steady_clock::now();
    if (tty_) ticker_ = std::thread([this] { tick(); });
    else std::fprintf(stderr, "loading %s\n", what_.c_str());
  }
  ~LoadProgress() { finish(); }
  void log(const std::string& line) {
    std::lock_guard l(mu_);
    std::fprintf(stderr, "%s%s\n", tty_ ? "\r\033[K" : "", line.c_str());
    if (tty_) status();
  }
  void finish() {
    if (done_.exchange(true)) return;
    if (ticker_.joinable()) ticker_.join();
    std::lock_guard l(mu_);
    std::fprintf(stderr, "%sloaded %s in %.1f s\n", tty_ ? "\r\033[K" : "", what_.c_str(), elapsed());
  }

 private:
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  void status() {
    static const char spin[] = "|/-\\";
    std::fprintf(stderr, "\r\033[K%c loading %s  %.1f s", spin[frame_++ % 4], what_.c_str(), elapsed());
    std::fflush(stderr);
  }
  void tick() {
    while (!done_) {
      {
        std::lock_guard l(mu_);
        status();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  std::string what_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<bool> done_{false};
  std::mutex mu_;
  std::thread ticker_;
  unsigned frame_ = 0;
};

void run(const Args& a) {
  // SIGINT/SIGTERM are taken by one thread (sigwait) rather than a handler, so stopping the server runs
  // as ordinary code. Blocked before any thread starts, so every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const std::string dir = a.model.empty() ? ds4::cli::default_model_dir() : a.model;
  std::unique_ptr<ds4::server::ServedModel> model;
  {
    LoadProgress progress(dir);
    model = ds4::server::ServedModel::load(dir, a.name, a.context, [&](const std::string& m) { progress.log(m); },
                                           {a.backend});
  }

  ds4::server::ServerOptions o;
  o.host = a.host;
  o.port = a.port;
  o.max_body_bytes = a.max_body_bytes;
  o.http_threads = a.http_threads;
  o.scheduler.workers = a.parallel;
  o.scheduler.max_queued = a.max_queue;
  o.service.speculative = a.speculative;
  ds4::server::HttpServer server(*model, o);
  const int port = server.bind();

  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    server.stop();
  });
  std::printf("serving model '%s' (context %lld) on http://%s:%d\nlistening on http://%s:%d\n", model->id().c_str(),
              (long long)model->context(), a.host.c_str(), port, a.host.c_str(), port);
  std::fflush(stdout);
  server.run();
  // run() returns after stop(); if it returned on its own, wake the stopper so it can be joined.
  pthread_kill(stopper.native_handle(), SIGTERM);
  stopper.join();
  std::fprintf(stderr, "server stopped\n");
}

ds4::cli::RegisterCommand reg([](CLI::App& app) {
  auto a = std::make_shared<Args>();
  auto* sub = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
  sub->add_option("--model", a->model, "Model directory (default: the repository's default model)");
  sub->add_option("--backend", a->backend, "Compute backend: cpu (reference) or cuda (when built with it)")->capture_default_str();
  sub->add_option("--name", a->name, "Model id clients use (default: the directory name)");
  sub->add_option("--host", a->host, "Address to listen on")->capture_default_str();
  sub->add_option("--port", a->port, "Port to listen on (0: any free port)")->capture_default_str();
  sub->add_option("--ctx", a->context, "Context length per request (default: the model's)");
  sub->add_option("--parallel", a->parallel, "Sequences generated at once")->capture_default_str()->check(
      CLI::Range(1, 1024));
  sub->add_option("--max-queue", a->max_queue, "Requests waiting beyond --parallel; more get 503")
      ->capture_default_str();
  sub->add_option("--max-body-bytes", a->max_body_bytes, "Largest request body; larger get 413")
      ->capture_default_str();
  sub->add_option("--http-threads", a->http_threads, "Connections served at once")->capture_default_str()->check(
      CLI::Range(2, 4096));
  sub->add_flag("--speculative", a->speculative, "Draft with the model's MTP head (same output, fewer forwards)");
  sub->callback([a] { run(*a); });
});

}  // namespace
