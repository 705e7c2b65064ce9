// Shared inputs of the tokenizer tests: the real tokenizers (loaded once per test process), the synthetic
// ones, the test strings and the reference outputs that tools/oracle/tokenizer_reference.py writes with
// HF `tokenizers` into tests/fixtures/tokenizer/.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>
#include <zstd.h>

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "support/paths.h"
#include "text/tokenizer.h"

namespace ds4::test {

inline std::string tokenizer_fixtures() { return fixtures_dir() + "/tokenizer"; }

// The reference outputs are committed zstd-compressed (X.jsonl.zst, about 15x smaller); a plain X.jsonl
// (fresh from the oracle script) is read as well.
inline bool file_exists(const std::string& path) {
  return std::ifstream(path).good() || std::ifstream(path + ".zst").good();
}

inline std::string read_fixture_text(const std::string& path) {
  std::ifstream plain(path, std::ios::binary);
  std::ifstream packed(path + ".zst", std::ios::binary);
  if (!plain && !packed) throw std::runtime_error("cannot open " + path + " (or " + path + ".zst)");
  std::stringstream buf;
  buf << (plain ? plain.rdbuf() : packed.rdbuf());
  if (plain) return buf.str();
  const std::string z = buf.str();
  const unsigned long long n = ZSTD_getFrameContentSize(z.data(), z.size());
  if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN)
    throw std::runtime_error(path + ".zst: not a zstd frame with a known size");
  std::string out(n, '\0');
  const size_t got = ZSTD_decompress(out.data(), out.size(), z.data(), z.size());
  if (ZSTD_isError(got) || got != n) throw std::runtime_error(path + ".zst: corrupt");
  return out;
}

// A scratch file path private to this process (ctest runs tests in parallel processes, and other
// checkouts may run theirs in the same temporary directory).
inline std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "/ds4_" + std::to_string(getpid()) + "_" + name;
}

inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::istringstream in(read_fixture_text(path));
  std::vector<nlohmann::json> rows;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

inline const std::vector<std::string>& test_strings() {
  static const std::vector<std::string> strings = [] {
    std::vector<std::string> out;
    for (const auto& j : read_jsonl(tokenizer_fixtures() + "/strings.jsonl")) out.push_back(j.get<std::string>());
    return out;
  }();
  return strings;
}

// Reference ids (one array per test string) from OUTDIR/<name>.jsonl, or nullopt when the reference has
// not been generated yet.
inline std::optional<std::vector<std::vector<int32_t>>> reference_ids(const std::string& name) {
  std::string path = tokenizer_fixtures() + "/" + name + ".jsonl";
  if (!file_exists(path)) return std::nullopt;
  std::vector<std::vector<int32_t>> out;
  for (const auto& j : read_jsonl(path)) out.push_back(j.get<std::vector<int32_t>>());
  return out;
}

inline std::string missing_reference(const std::string& name) {
  return "reference " + tokenizer_fixtures() + "/" + name +
         ".jsonl is missing: run tools/oracle/tokenizer_reference.py on the GPU machine and commit its outputs";
}

// Qwen3 with the Qwen3.5 split regex (combining marks stay with their letters): the Qwen3 file with its
// Split pattern replaced, as the reference script does.
inline const char* kQwen35Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

inline std::string write_qwen3_marks_file() {
  std::ifstream in(tokenizer_cache() + "/qwen3/tokenizer.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  int replaced = 0;
  for (auto& p : doc["pre_tokenizer"]["pretokenizers"])
    if (p["type"] == "Split") {
      p["pattern"] = {{"Regex", kQwen35Pattern}};
      ++replaced;
    }
  if (replaced != 1) throw std::runtime_error("unexpected Qwen3 pre_tokenizer layout");
  std::string path = temp_path("qwen3_marks_tokenizer.json");
  std::ofstream(path) << doc.dump();
  return path;
}

// "qwen3", "deepseek_v3", "qwen3_marks" or a synthetic tokenizer's name ("synth_llama", ...).
inline const text::Tokenizer& tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<text::Tokenizer>> loaded;
  auto it = loaded.find(name);
  if (it != loaded.end()) return *it->second;
  std::string path;
  if (name == "qwen3_marks") {
    path = write_qwen3_marks_file();
  } else if (name.rfind("synth_", 0) == 0) {
    path = tokenizer_fixtures() + "/synthetic/" + name + ".json";
  } else {
    path = tokenizer_cache() + "/" + name + "/tokenizer.json";
  }
  auto tok = std::make_unique<text::Tokenizer>(text::Tokenizer::from_file(path));
  return *loaded.emplace(name, std::move(tok)).first->second;
}

inline const std::vector<std::string>& synthetic_names() {
  static const std::vector<std::string> names = {"synth_affixes", "synth_bytelevel_flags", "synth_llama",
                                                 "synth_split_behaviors"};
  return names;
}

// Printable form of a string for failure messages: JSON-escaped, cut after `max` bytes.
inline std::string show(const std::string& s, size_t max = 300) {
  std::string cut = s.size() > max ? s.substr(0, max) : s;
  std::string out = nlohmann::json(cut).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > max) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

inline std::string show(const std::vector<int32_t>& ids, size_t max = 40) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < ids.size() && i < max; ++i) o << (i ? ", " : "") << ids[i];
  if (ids.size() > max) o << ", ... (" << ids.size() << " ids)";
  o << "]";
  return o.str();
}

}  // namespace ds4::test
