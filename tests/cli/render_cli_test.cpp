// `ds4 render` end to end: a temporary model directory holding the real Qwen3 tokenizer_config.json, a
// request file, and the exact prompt on stdout (compared with the Jinja2 reference of the same request).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/paths.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

struct CommandResult {
  int status = -1;
  std::string out;
};

CommandResult run(const std::string& command) {
  CommandResult r;
  FILE* p = popen(command.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

json fixture_case(const std::string& name) {
  std::ifstream f(ds4::test::fixtures_dir() + "/templates/cases.jsonl");
  std::string line;
  while (std::getline(f, line)) {
    json c = json::parse(line);
    if (c["name"] == name) return c;
  }
  return json();
}

class ChatTemplateCli : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ds4_render_cli_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    fs::copy_file(ds4::test::tokenizer_cache() + "/qwen3/tokenizer_config.json", dir_ / "tokenizer_config.json");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& content) {
    std::ofstream f(dir_ / name, std::ios::binary);
    f << content;
    return (dir_ / name).string();
  }
  std::string render_command(const std::string& request_path) {
    return ds4::test::ds4_binary() + " render --model " + dir_.string() + " --request " + request_path;
  }

  fs::path dir_;
};

TEST_F(ChatTemplateCli, PrintsExactlyThePrompt) {
  for (const char* name : {"qwen3/parallel_tool_calls_and_responses", "qwen3/unicode_content",
                           "qwen3/enable_thinking_false", "qwen3/whitespace_heavy_content"}) {
    json c = fixture_case(name);
    ASSERT_TRUE(c.is_object()) << name;
    std::string request = write("request.json", c["request"].dump());
    CommandResult r = run(render_command(request) + " 2>/dev/null");
    EXPECT_EQ(r.status, 0) << name;
    EXPECT_EQ(r.out, c["expected"].get<std::string>()) << name;
  }
}

TEST_F(ChatTemplateCli, TemplateErrorExitsNonZeroWithMessage) {
  json c = fixture_case("qwen3/qwen3_tool_call_content_none_error");
  ASSERT_TRUE(c.is_object());
  std::string request = write("request.json", c["request"].dump());
  CommandResult r = run(render_command(request) + " 2>&1 >/dev/null");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find(c["error"].get<std::string>()), std::string::npos) << r.out;
}

TEST_F(ChatTemplateCli, BadRequestsExitNonZero) {
  CommandResult missing = run(render_command((dir_ / "absent.json").string()) + " 2>&1");
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.out.find("absent.json"), std::string::npos) << missing.out;

  CommandResult invalid = run(render_command(write("bad.json", "{\"messages\": [")) + " 2>&1");
  EXPECT_NE(invalid.status, 0);
  EXPECT_NE(invalid.out.find("invalid JSON"), std::string::npos) << invalid.out;

  CommandResult no_messages = run(render_command(write("nomsg.json", "{\"tools\": []}")) + " 2>&1");
  EXPECT_NE(no_messages.status, 0);
  EXPECT_NE(no_messages.out.find("messages"), std::string::npos) << no_messages.out;

  // transformers refuses an empty conversation; so does ds4, with its message and nothing on stdout.
  CommandResult empty = run(render_command(write("empty.json", "{\"messages\": []}")) + " 2>&1 >/dev/null");
  EXPECT_NE(empty.status, 0);
  EXPECT_NE(empty.out.find("Cannot apply chat template to an empty conversation"), std::string::npos) << empty.out;

  CommandResult no_model = run(ds4::test::ds4_binary() + " render --model /nonexistent/dir --request " +
                     write("ok.json", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}") + " 2>&1");
  EXPECT_NE(no_model.status, 0);
  EXPECT_NE(no_model.out.find("no chat template"), std::string::npos) << no_model.out;
}

TEST_F(ChatTemplateCli, TemplateSyntaxErrorNamesTheFile) {
  write("chat_template.jinja", "{% if messages %}unclosed");
  CommandResult r = run(render_command(write("ok.json", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}")) + " 2>&1");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.out.find("chat_template.jinja"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Unexpected end of template"), std::string::npos) << r.out;
}

}  // namespace
