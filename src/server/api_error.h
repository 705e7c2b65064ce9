// Errors as the OpenAI API reports them: an HTTP status and the body
// {"error": {"message", "type", "param", "code"}}. An ApiError is a ds4::Error, so code that only knows
// ds4::Error still handles it; from_error() maps the other kinds to a status.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"

namespace ds4::server {

class ApiError : public Error {
 public:
  ApiError(int status, std::string type, const std::string& message, std::string param = "", std::string code = "",
           ErrorKind kind = ErrorKind::InvalidArgument);
  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }  // empty: null in the body
  const std::string& code() const { return code_; }    // empty: null in the body
  nlohmann::json body() const;

 private:
  int status_;
  std::string type_, param_, code_;
};

// 400 invalid_request_error: the client sent something the API does not accept.
ApiError invalid_request(const std::string& message, const std::string& param = "", const std::string& code = "");

// Any error raised while serving a request, as the client sees it: an ApiError as it is; a ds4::Error by
// kind (caller mistakes such as template or tokenizer failures on the client's text are 400, invalid logits
// and everything else 500 naming the kind); any other exception a 500 internal_error.
ApiError to_api_error(const std::exception& e);

}  // namespace ds4::server
