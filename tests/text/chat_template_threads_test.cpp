// The server renders one parsed template from many request threads at once: renders must not share
// mutable state. Several threads render Jinja2-referenced cases concurrently and must all match.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "support/paths.h"
#include "text/chat_template.h"

namespace {

using json = nlohmann::ordered_json;

TEST(ChatTemplateThreads, ConcurrentRendersOfOneTemplateMatchTheReference) {
  auto tmpl = ds4::text::ModelChatTemplate::load(ds4::test::tokenizer_cache() + "/qwen3");
  std::vector<json> cases;
  std::ifstream f(ds4::test::fixtures_dir() + "/templates/cases.jsonl");
  std::string line;
  while (std::getline(f, line)) {
    json c = json::parse(line);
    if (c["kind"] == "model" && c["model"] == "qwen3" && c.contains("expected")) cases.push_back(std::move(c));
  }
  ASSERT_GT(cases.size(), 10u);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep)
        for (size_t i = t; i < cases.size() + t; ++i) {
          const json& c = cases[i % cases.size()];
          if (tmpl.render(c["request"]) != c["expected"].get<std::string>()) ++mismatches;
        }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace
