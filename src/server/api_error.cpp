#include "server/api_error.h"

namespace ds4::server {

ApiError::ApiError(int status, std::string type, const std::string& message, std::string param, std::string code,
                   ErrorKind kind)
    : Error(kind, message), status_(status), type_(std::move(type)), param_(std::move(param)), code_(std::move(code)) {}

nlohmann::json ApiError::body() const {
  nlohmann::json e = {{"message", what()}, {"type", type_}, {"param", nullptr}, {"code", nullptr}};
  if (!param_.empty()) e["param"] = param_;
  if (!code_.empty()) e["code"] = code_;
  return {{"error", e}};
}

ApiError invalid_request(const std::string& message, const std::string& param, const std::string& code) {
  return ApiError(400, "invalid_request_error", message, param, code);
}

ApiError to_api_error(const std::exception& e) {
  if (auto* api = dynamic_cast<const ApiError*>(&e)) return *api;
  if (auto* err = dynamic_cast<const Error*>(&e)) {
    switch (err->kind()) {
      case ErrorKind::InvalidArgument:
        return ApiError(400, "invalid_request_error", err->what(), "", "invalid_value", err->kind());
      case ErrorKind::Template:
        return ApiError(400, "invalid_request_error", std::string("chat template: ") + err->what(), "messages",
                        "template_error", err->kind());
      case ErrorKind::Tokenizer:
        return ApiError(400, "invalid_request_error", std::string("tokenizer: ") + err->what(), "", "tokenizer_error",
                        err->kind());
      case ErrorKind::InvalidLogits:
        return ApiError(500, "server_error", std::string("invalid logits: ") + err->what(), "", "invalid_logits",
                        err->kind());
      default:
        return ApiError(500, "server_error", std::string(error_kind_name(err->kind())) + ": " + err->what(), "",
                        "internal_error", err->kind());
    }
  }
  return ApiError(500, "server_error", std::string("internal error: ") + e.what(), "", "internal_error",
                  ErrorKind::Internal);
}

}  // namespace ds4::server
