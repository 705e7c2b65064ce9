// The tiny chat model directory the server tests use, made once per test process by
// tools/make_test_model.py: the test tokenizer and chat template next to the vl_bf16 fixture's weights.
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

#include "support/paths.h"

namespace ds4::test {

inline std::string test_model_dir() {
  static std::once_flag once;
  static std::string dir;
  std::call_once(once, [] {
    dir = "/tmp/ds4_test_model_" + std::to_string(::getpid());
    const std::string cmd = "python3 " + source_dir() + "/tools/make_test_model.py " + dir + " --weights " +
                            fixtures_dir() + "/qwen4/vl_bf16";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  });
  return dir;
}

}  // namespace ds4::test
