#include "server/http_server.h"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <csignal>
#include <cstdlib>

#include "server/api_error.h"
#include "server/response_builder.h"

namespace ds4::server {
namespace {

// The label a request is counted under: its route, or "other" so that arbitrary paths cannot grow the
// metrics without bound.
std::string route_label(const std::string& path) {
  for (const char* r : {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics"})
    if (path == r) return r;
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  return "other";
}

// Debian's cpp-httplib 0.11 is built with a listen backlog of 5, so a burst of clients connecting at once
// gets connections dropped before the server ever sees them. httplib does not expose its socket, so find
// the listening socket bound to `port` among the process's descriptors and listen() on it again: Linux
// then applies the larger backlog to the same socket.
void widen_listen_backlog(int port) {
  DIR* d = ::opendir("/proc/self/fd");
  if (!d) return;
  while (dirent* e = ::readdir(d)) {
    const int fd = std::atoi(e->d_name);
    if (fd <= 2) continue;
    int listening = 0;
    socklen_t len = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) continue;
    sockaddr_storage addr{};
    socklen_t alen = sizeof addr;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) continue;
    int bound = -1;
    if (addr.ss_family == AF_INET) bound = ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
    if (addr.ss_family == AF_INET6) bound = ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
    if (bound == port) ::listen(fd, SOMAXCONN);
  }
  ::closedir(d);
}

}  // namespace

HttpServer::HttpServer(const ServedModel& model, ServerOptions options)
    : model_(model),
      options_(options),
      scheduler_([&model](const engine::GenerationRequest& r, const engine::TokenCallback& cb) { return model.generate(r, cb); },
                 options.scheduler),
      service_(model, scheduler_, metrics_, options.service) {
  // A client that closes its socket must not kill the process with SIGPIPE on the next write.
  std::signal(SIGPIPE, SIG_IGN);
  metrics_.set_gauges([this] { return int64_t(scheduler_.queued()); }, [this] { return int64_t(scheduler_.active()); });
  const size_t threads = size_t(std::max(2, options_.http_threads));
  http_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // httplib's default also sets SO_REUSEPORT, which would let a second server silently share a port that
  // is already serving; with SO_REUSEADDR alone, a taken port is an error.
  http_.set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  http_.set_payload_max_length(options_.max_body_bytes);
  http_.set_keep_alive_max_count(1000);  // clients reuse connections; the default closes after 5 requests
  routes();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::routes() {
  http_.Post("/v1/chat/completions", [this](const httplib::Request& q, httplib::Response& s) { service_.chat(q, s); });
  http_.Post("/v1/completions", [this](const httplib::Request& q, httplib::Response& s) { service_.completion(q, s); });
  http_.Get("/v1/models", [this](const httplib::Request&, httplib::Response& s) {
    s.set_content(dump_json(model_list_json(model_.id(), model_.created(), model_.context())), "application/json");
    metrics_.count_request("/v1/models", 200);
  });
  http_.Get(R"(/v1/models/(.+))", [this](const httplib::Request& q, httplib::Response& s) {
    const std::string id = q.matches[1];
    if (id != model_.id())
      return service_.send_error("/v1/models/{id}",
                                 ApiError(404, "invalid_request_error", "The model '" + id + "' does not exist",
                                          "model", "model_not_found"),
                                 s);
    s.set_content(dump_json(model_list_json(model_.id(), model_.created(), model_.context())["data"][0]),
                  "application/json");
    metrics_.count_request("/v1/models/{id}", 200);
  });
  http_.Get("/health", [this](const httplib::Request&, httplib::Response& s) {
    s.set_content(R"({"status":"ok"})", "application/json");
    metrics_.count_request("/health", 200);
  });
  http_.Get("/metrics", [this](const httplib::Request&, httplib::Response& s) {
    metrics_.count_request("/metrics", 200);
    s.set_content(metrics_.render(), "text/plain; version=0.0.4; charset=utf-8");
  });

  // httplib's own errors (no route, body too large, unreadable request) arrive here with an empty body;
  // the routes' errors already have theirs.
  http_.set_error_handler([this](const httplib::Request& q, httplib::Response& s) {
    if (!s.body.empty()) return;
    std::string message, code;
    switch (s.status) {
      case 404: message = "Unknown route: " + q.method + " " + q.path; code = "not_found"; break;
      case 405: message = "Method not allowed: " + q.method + " " + q.path; code = "method_not_allowed"; break;
      case 413:
        message = "Request body exceeds the server's limit of " + std::to_string(options_.max_body_bytes) + " bytes";
        code = "request_too_large";
        break;
      case 414: message = "Request URI too long"; code = "uri_too_long"; break;
      default: message = "Bad request (HTTP " + std::to_string(s.status) + ")"; code = "bad_request"; break;
    }
    ApiError e(s.status, s.status >= 500 ? "server_error" : "invalid_request_error", message, "", code);
    s.set_content(dump_json(e.body()), "application/json");
    metrics_.count_request(route_label(q.path), s.status);
  });
  // A handler that throws still answers in the OpenAI shape; the process keeps serving.
  http_.set_exception_handler([this](const httplib::Request& q, httplib::Response& s, std::exception_ptr ep) {
    ApiError e(500, "server_error", "internal error", "", "internal_error");
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& ex) {
      e = to_api_error(ex);
    } catch (...) {
    }
    s.status = e.status();
    s.set_content(dump_json(e.body()), "application/json");
    metrics_.count_request(route_label(q.path), s.status);
  });
}

int HttpServer::bind() {
  port_ = options_.port == 0 ? http_.bind_to_any_port(options_.host)
                             : (http_.bind_to_port(options_.host, options_.port) ? options_.port : -1);
  if (port_ < 0)
    throw Error(ErrorKind::Io, "cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                                   " (address in use or not available)");
  widen_listen_backlog(port_);
  return port_;
}

void HttpServer::run() { http_.listen_after_bind(); }

void HttpServer::stop() {
  // Generations first: a stream blocked waiting for its next token is released by its cancelled result,
  // so httplib's threads can finish.
  scheduler_.shutdown();
  http_.stop();
}

}  // namespace ds4::server
