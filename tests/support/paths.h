// Where tests find their inputs: committed fixtures in the source tree, and the real tokenizer files that
// tools/fetch-tokenizers.sh caches (tools/test.sh exports DS4_TOKENIZER_CACHE; without it the script runs).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace ds4::test {

inline std::string source_dir() { return DS4_SOURCE_DIR; }
inline std::string fixtures_dir() { return std::string(DS4_SOURCE_DIR) + "/tests/fixtures"; }
inline std::string ds4_binary() { return DS4_BINARY; }

inline std::string tokenizer_cache() {
  if (const char* d = std::getenv("DS4_TOKENIZER_CACHE"); d && *d) return d;
  std::string cmd = "bash " + source_dir() + "/tools/fetch-tokenizers.sh";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) throw std::runtime_error("cannot run fetch-tokenizers.sh");
  char buf[4096];
  std::string out;
  while (fgets(buf, sizeof buf, p)) out += buf;
  if (pclose(p) != 0) throw std::runtime_error("fetch-tokenizers.sh failed");
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  setenv("DS4_TOKENIZER_CACHE", out.c_str(), 1);
  return out;
}

}  // namespace ds4::test
