// The shipped default model (models/tiny-flash-next) answers in English: `ds4 generate` without --model,
// greedy, and most of its words are in the system word list (an independent dictionary).
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>

#include "support/paths.h"
#include "support/run_command.h"

namespace ds4 {
namespace {

std::set<std::string> dictionary() {
  std::set<std::string> words;
  std::ifstream in("/usr/share/dict/words");
  std::string w;
  while (std::getline(in, w)) {
    for (auto& c : w) c = char(std::tolower(static_cast<unsigned char>(c)));
    words.insert(w);
  }
  return words;
}

std::vector<std::string> words_of(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text + " ") {
    if (std::isalpha(static_cast<unsigned char>(c))) {
      cur += char(std::tolower(static_cast<unsigned char>(c)));
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  return out;
}

TEST(DefaultModel, GenerateWithoutModelWritesEnglish) {
  ASSERT_TRUE(std::filesystem::exists(test::source_dir() + "/models/tiny-flash-next/config.json"));
  const auto dict = dictionary();
  ASSERT_GT(dict.size(), 50000u) << "/usr/share/dict/words (wamerican) is missing";
  for (const char* flags : {"", " --raw"}) {
    auto r = test::run_command("cd " + test::source_dir() + " && " + test::ds4_binary() +
                               " generate --prompt 'Once upon a time' --max-tokens 64 --temperature 0 --json" + flags);
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    const auto words = words_of(j["text"].get<std::string>());
    ASSERT_GE(words.size(), 5u) << r.out;
    size_t known = 0;
    for (auto& w : words) known += dict.count(w);
    EXPECT_GE(double(known) / double(words.size()), 0.8) << j["text"].get<std::string>();
    std::printf("[%s] %zu/%zu dictionary words: %s\n", flags, known, words.size(), j["text"].get<std::string>().c_str());
  }
}

}  // namespace
}  // namespace ds4
