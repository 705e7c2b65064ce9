#include "core/error.h"

namespace ds4 {

const char* error_kind_name(ErrorKind k) {
  switch (k) {
    case ErrorKind::Io: return "io_error";
    case ErrorKind::Format: return "format_error";
    case ErrorKind::Unsupported: return "unsupported";
    case ErrorKind::MissingTensor: return "missing_tensor";
    case ErrorKind::Shape: return "shape_mismatch";
    case ErrorKind::InvalidArgument: return "invalid_argument";
    case ErrorKind::InvalidLogits: return "invalid_logits";
    case ErrorKind::Template: return "template_error";
    case ErrorKind::Tokenizer: return "tokenizer_error";
    case ErrorKind::Internal: return "internal_error";
  }
  return "internal_error";
}

}  // namespace ds4
