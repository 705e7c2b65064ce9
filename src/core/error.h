// Typed errors: every failure a user can cause carries a kind (for HTTP status and tests) and a message
// that names the file, tensor or field and says what was expected.
#pragma once
#include <stdexcept>
#include <string>

namespace ds4 {

enum class ErrorKind {
  Io,              // a file cannot be opened, read or mapped
  Format,          // malformed JSON, safetensors header, truncated data
  Unsupported,     // unknown model_type, dtype or feature
  MissingTensor,   // a tensor the model needs is not in the checkpoint
  Shape,           // a tensor or config value has the wrong shape
  InvalidArgument, // bad CLI or request parameter
  InvalidLogits,   // NaN / +inf / all -inf logits
  Template,        // chat template error
  Tokenizer,       // tokenizer.json problems
  Internal,
};

const char* error_kind_name(ErrorKind k);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& msg) : std::runtime_error(msg), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace ds4
