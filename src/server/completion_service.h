// POST /v1/chat/completions and /v1/completions: a request body becomes a prompt and a generation request,
// goes through the scheduler, and comes back as one JSON response or as a server-sent event stream.
// Errors before the first token are HTTP errors in the OpenAI shape; an error after a stream has started
// is sent as a final {"error": ...} event. A client that goes away mid-stream cancels its generation at the
// next token.
#pragma once
#include <httplib.h>

#include <string>

#include "engine/scheduler.h"
#include "server/api_error.h"
#include "server/metrics.h"
#include "server/served_model.h"

namespace ds4::server {

struct ServiceOptions {
  int retry_after_seconds = 1;  // sent with 503 when the queue is full
  bool speculative = false;     // MTP drafting (same tokens, fewer forwards) when the model has a draft head
};

class CompletionService {
 public:
  CompletionService(const ServedModel& model, engine::Scheduler& scheduler, Metrics& metrics, ServiceOptions options);

  void chat(const httplib::Request& req, httplib::Response& res);
  void completion(const httplib::Request& req, httplib::Response& res);

  // Writes an error response in the OpenAI shape and counts it.
  void send_error(const std::string& route, const ApiError& e, httplib::Response& res);

 private:
  struct Prepared;
  void run(Prepared p, httplib::Response& res);
  engine::GenerationRequest generation_request(const GenerationOptions& o, std::vector<int32_t> prompt,
                                               const std::string& prompt_param) const;

  const ServedModel& model_;
  engine::Scheduler& scheduler_;
  Metrics& metrics_;
  ServiceOptions options_;
};

}  // namespace ds4::server
