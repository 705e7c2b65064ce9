// Chat template rendering against Python Jinja2 set up as transformers sets it up: every case in
// tests/fixtures/templates/cases.jsonl (made by tools/oracle/render_reference.py) must render byte for
// byte the same, or fail with Jinja2's error message.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "support/paths.h"
#include "support/sha256.h"
#include "text/chat_template.h"

namespace {

using json = nlohmann::ordered_json;

std::vector<json> load_cases(const std::string& kind) {
  std::ifstream f(ds4::test::fixtures_dir() + "/templates/cases.jsonl");
  std::vector<json> out;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty()) continue;
    json c = json::parse(line);
    if (c["kind"] == kind) out.push_back(std::move(c));
  }
  return out;
}

std::string test_name(const testing::TestParamInfo<json>& info) {
  std::string n = info.param["name"].get<std::string>();
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

// Shows where two renders first differ; whole prompts are too long to read in a failure message.
std::string first_difference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  auto around = [&](const std::string& s) { return json(s.substr(i < 40 ? 0 : i - 40, 100)).dump(); };
  return "first difference at byte " + std::to_string(i) + "\n  want: " + around(want) + "\n  got:  " + around(got);
}

void expect_render(const json& c, const std::function<std::string()>& render) {
  if (c.contains("expected")) {
    std::string want = c["expected"].get<std::string>();
    std::string got;
    try {
      got = render();
    } catch (const ds4::Error& e) {
      FAIL() << "render failed: " << e.what();
    }
    EXPECT_EQ(got, want) << first_difference(want, got);
    return;
  }
  std::string substring = c["error"].get<std::string>();
  try {
    std::string got = render();
    FAIL() << "rendered instead of failing with \"" << substring << "\": " << json(got).dump();
  } catch (const ds4::Error& e) {
    // Jinja2's errors are Template errors; apply_chat_template's own ValueErrors are invalid arguments.
    EXPECT_TRUE(e.kind() == ds4::ErrorKind::Template || e.kind() == ds4::ErrorKind::InvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(substring), std::string::npos)
        << "message: " << e.what() << "\nJinja2 said: " << c["python_error"].get<std::string>();
  }
}

class JinjaFeature : public testing::TestWithParam<json> {};

TEST_P(JinjaFeature, MatchesJinja2) {
  const json& c = GetParam();
  expect_render(c, [&] {
    return ds4::text::ChatTemplate::parse(c["template"].get<std::string>()).render(c["context"]);
  });
}

INSTANTIATE_TEST_SUITE_P(Jinja, JinjaFeature, testing::ValuesIn(load_cases("feature")), test_name);

class ChatTemplateModel : public testing::TestWithParam<json> {};

TEST_P(ChatTemplateModel, MatchesJinja2) {
  const json& c = GetParam();
  std::string dir = ds4::test::tokenizer_cache() + "/" + c["model"].get<std::string>();
  auto tmpl = ds4::text::ModelChatTemplate::load(dir);
  ASSERT_EQ(ds4::test::sha256_hex(tmpl.get("default").source()), c["template_sha256"].get<std::string>())
      << "the chat template in " << dir << " changed; rerun tools/oracle/render_reference.py";
  expect_render(c, [&] { return tmpl.render(c["request"]); });
}

INSTANTIATE_TEST_SUITE_P(ChatTemplate, ChatTemplateModel, testing::ValuesIn(load_cases("model")), test_name);

// Small model directories: which template file wins, named templates, and the special tokens.
class ChatTemplateModelDir : public testing::TestWithParam<json> {};

TEST_P(ChatTemplateModelDir, MatchesJinja2) {
  const json& c = GetParam();
  char dir_template[] = "/tmp/ds4_chat_template_XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  std::filesystem::path dir(dir_template);
  for (const auto& [name, content] : c["files"].items()) {
    std::filesystem::create_directories((dir / name).parent_path());
    std::ofstream f(dir / name, std::ios::binary);
    f << (content.is_string() ? content.get<std::string>() : content.dump());
  }
  auto tmpl = ds4::text::ModelChatTemplate::load(dir.string());
  expect_render(c, [&] { return tmpl.render(c["request"]); });
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(ChatTemplate, ChatTemplateModelDir, testing::ValuesIn(load_cases("model_dir")), test_name);

TEST(ChatTemplateFixture, HasCasesOfEveryKind) {
  EXPECT_GT(load_cases("feature").size(), 100u);
  EXPECT_GT(load_cases("model").size(), 40u);
  EXPECT_GE(load_cases("model_dir").size(), 5u);
}

}  // namespace
