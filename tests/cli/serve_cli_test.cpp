// The `ds4 serve` contract: with no --model it serves the repository's default model (tiny-flash-next),
// prints the address it listens on (port 0 picks a free one), answers over loopback, and exits 0 on
// SIGTERM; a bad model directory or a taken port is an error naming it.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "support/paths.h"
#include "support/run_command.h"

extern char** environ;

namespace ds4 {
namespace {

// `ds4 serve ARGS` in the background; reads its stdout until it prints the port.
class ServeProcess {
 public:
  explicit ServeProcess(std::vector<std::string> args) {
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    args.insert(args.begin(), {test::ds4_binary(), "serve"});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0) throw std::runtime_error("spawn");
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    std::string got;
    char buf[256];
    const std::regex re(R"(listening on http://127\.0\.0\.1:(\d+))");
    std::smatch m;
    ssize_t n;
    while (!std::regex_search(got, m, re) && (n = read(out[0], buf, sizeof buf)) > 0) got.append(buf, size_t(n));
    if (std::regex_search(got, m, re)) port_ = std::stoi(m[1]);
    output_ = got;
    close(out[0]);
  }
  ~ServeProcess() {
    if (pid_ > 0) stop();
  }
  int stop() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  int port() const { return port_; }
  const std::string& output() const { return output_; }

 private:
  pid_t pid_ = -1;
  int port_ = -1;
  std::string output_;
};

TEST(ServeCli, DefaultModelAnswersAndStopsCleanly) {
  ServeProcess p({"--port", "0"});
  ASSERT_GT(p.port(), 0) << p.output();
  httplib::Client c("127.0.0.1", p.port());
  auto res = c.Get("/health");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  res = c.Get("/v1/models");
  ASSERT_TRUE(res);
  const auto models = nlohmann::json::parse(res->body);
  ASSERT_EQ(models["data"].size(), 1u);
  const std::string id = models["data"][0]["id"];
  EXPECT_EQ(id, "tiny-flash-next");
  // The shipped model has a tokenizer and a chat template: both endpoints answer.
  res = c.Post("/v1/chat/completions",
               nlohmann::json{{"model", id}, {"messages", {{{"role", "user"}, {"content", "Hello!"}}}}, {"max_tokens", 8}}
                   .dump(),
               "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto chat = nlohmann::json::parse(res->body);
  EXPECT_TRUE(chat["choices"][0]["message"]["content"].is_string());
  EXPECT_LE(chat["usage"]["completion_tokens"].get<int>(), 8);
  res = c.Post("/v1/completions", nlohmann::json{{"model", id}, {"prompt", {5, 9, 11}}, {"max_tokens", 4}}.dump(),
               "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_LE(nlohmann::json::parse(res->body)["usage"]["completion_tokens"].get<int>(), 4);
  EXPECT_EQ(p.stop(), 0);
}

TEST(ServeCli, BadModelDirectoryAndTakenPortAreErrors) {
  auto r = test::run_command(test::ds4_binary() + " serve --model /nonexistent/model --port 0");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("/nonexistent/model"), std::string::npos) << r.err;

  ServeProcess first({"--model", test::fixtures_dir() + "/qwen4/text_f32", "--port", "0"});
  ASSERT_GT(first.port(), 0);
  r = test::run_command("timeout 60 " + test::ds4_binary() + " serve --model " + test::fixtures_dir() + "/qwen4/text_f32 --port " +
                        std::to_string(first.port()));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find(std::to_string(first.port())), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ds4
