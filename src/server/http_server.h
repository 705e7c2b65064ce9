// The OpenAI-compatible HTTP server: routes (cpp-httplib) over a served model, its scheduler and metrics.
//   POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /v1/models/{id},
//   GET /health, GET /metrics
// Every error, including the ones httplib produces itself (unknown route, oversize body), has the OpenAI
// error shape. Binding port 0 picks a free port (tests); stop() ends generation and serving cleanly.
#pragma once
#include <httplib.h>

#include <memory>
#include <string>

#include "engine/scheduler.h"
#include "server/completion_service.h"
#include "server/metrics.h"
#include "server/served_model.h"

namespace ds4::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                          // 0: any free port
  size_t max_body_bytes = 8u << 20;         // larger bodies get 413
  int http_threads = 64;                    // connections served at once (queued ones wait for a thread)
  engine::SchedulerOptions scheduler;       // sequences at once, queue bound (503 beyond it)
  ServiceOptions service;
};

class HttpServer {
 public:
  HttpServer(const ServedModel& model, ServerOptions options);
  ~HttpServer();  // stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the socket; returns the port (the chosen one for port 0). Throws ds4::Error(Io) on failure.
  int bind();
  // Serves until stop(); call after bind().
  void run();
  // Cancels queued and running generations, then stops serving. Safe from any thread; idempotent.
  void stop();

  int port() const { return port_; }
  Metrics& metrics() { return metrics_; }
  engine::Scheduler& scheduler() { return scheduler_; }

 private:
  void routes();

  const ServedModel& model_;
  ServerOptions options_;
  Metrics metrics_;               // outlives the scheduler: worker callbacks record into it
  engine::Scheduler scheduler_;
  CompletionService service_;
  httplib::Server http_;
  int port_ = -1;
};

}  // namespace ds4::server
