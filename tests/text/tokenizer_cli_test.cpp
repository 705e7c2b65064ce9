// `ds4 tokenize`, the contract outside checks use: --jsonl prints one JSON array of ids per stdin line,
// --model DIR --text prints {"ids": [...]}, errors go to stderr with a non-zero exit. The ids must be the
// library's (which the reference tests check against HF).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "support/tokenizer_fixtures.h"

namespace ds4::test {
namespace {

struct Result {
  int exit_code;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `ds4 ARGS < stdin_text`; arguments are passed through the shell, so they must be quoted.
Result run_ds4(const std::string& args, const std::string& stdin_text = "") {
  std::string in = temp_path("cli_in.txt"), out = temp_path("cli_out.txt"), err = temp_path("cli_err.txt");
  std::ofstream(in) << stdin_text;
  // Built with append: GCC 12 warns falsely (-Wrestrict) on a long chain of operator+ here.
  std::string cmd = "'";
  for (const std::string& part : {ds4_binary(), std::string("' tokenize "), args, std::string(" < '"), in,
                                  std::string("' > '"), out, std::string("' 2> '"), err, std::string("'")})
    cmd += part;
  int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

std::string synth_path() { return tokenizer_fixtures() + "/synthetic/synth_bytelevel_flags.json"; }

TEST(TokenizerCli, JsonlPrintsOneIdArrayPerLine) {
  const auto& tok = tokenizer("synth_bytelevel_flags");
  std::vector<std::string> inputs(test_strings().begin(), test_strings().begin() + 60);
  std::string stdin_text;
  for (const auto& s : inputs) stdin_text += nlohmann::json(s).dump() + "\n";
  Result r = run_ds4("--tokenizer '" + synth_path() + "' --jsonl", stdin_text);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  size_t n = 0;
  for (; std::getline(lines, line); ++n) {
    ASSERT_LT(n, inputs.size());
    EXPECT_EQ(nlohmann::json::parse(line).get<std::vector<int32_t>>(), tok.encode(inputs[n])) << show(inputs[n]);
  }
  EXPECT_EQ(n, inputs.size());
}

TEST(TokenizerCli, AddSpecialTokensAppliesThePostProcessor) {
  const auto& tok = tokenizer("synth_bytelevel_flags");
  Result r = run_ds4("--tokenizer '" + synth_path() + "' --jsonl --add-special-tokens", "\"hello world\"\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).get<std::vector<int32_t>>(), tok.encode("hello world", true));
}

TEST(TokenizerCli, ModelDirAndTextPrintIdsObject) {
  const auto& tok = tokenizer("qwen3");
  std::string text = "Hello, world! <|im_start|>user\n\xE4\xBD\xA0\xE5\xA5\xBD";
  Result r = run_ds4("--model '" + tokenizer_cache() + "/qwen3' --text '" + text + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("ids")) << r.out;
  EXPECT_EQ(j["ids"].get<std::vector<int32_t>>(), tok.encode(text));
  EXPECT_EQ(r.out.rfind("{\"ids\": [", 0), 0u) << r.out;
}

TEST(TokenizerCli, ErrorsExitNonZeroWithAMessage) {
  Result missing = run_ds4("--tokenizer /nonexistent/tokenizer.json --text hi");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("/nonexistent/tokenizer.json"), std::string::npos) << missing.err;

  Result bad_line = run_ds4("--tokenizer '" + synth_path() + "' --jsonl", "\"ok\"\nnot json\n");
  EXPECT_NE(bad_line.exit_code, 0);
  EXPECT_NE(bad_line.err.find("line 2"), std::string::npos) << bad_line.err;

  Result not_string = run_ds4("--tokenizer '" + synth_path() + "' --jsonl", "[1, 2]\n");
  EXPECT_NE(not_string.exit_code, 0);
  EXPECT_NE(not_string.err.find("line 1"), std::string::npos) << not_string.err;

  Result neither = run_ds4("--text hi");
  EXPECT_NE(neither.exit_code, 0);
  EXPECT_FALSE(neither.err.empty());

  Result both = run_ds4("--tokenizer '" + synth_path() + "' --jsonl --text hi");
  EXPECT_NE(both.exit_code, 0);
  EXPECT_FALSE(both.err.empty());
}

}  // namespace
}  // namespace ds4::test
