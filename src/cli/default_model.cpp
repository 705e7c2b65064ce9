#include "cli/default_model.h"

#include <filesystem>

namespace ds4::cli {

std::string default_model_dir() {
  namespace fs = std::filesystem;
  // Relative to the working directory first (a checkout), then to the source tree this binary was built from.
  for (const std::string& root : {std::string("."), std::string(DS4_SOURCE_DIR)})
    for (const char* rel : {"models/tiny-flash-next", "tests/fixtures/qwen4/text_f32"})
      if (fs::exists(fs::path(root) / rel / "config.json")) return (fs::path(root) / rel).lexically_normal().string();
  return "models/tiny-flash-next";
}

}  // namespace ds4::cli
