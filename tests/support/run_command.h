// Runs a command line and captures its stdout, stderr and exit status (for CLI contract tests).
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <string>

namespace ds4::test {

struct CommandResult {
  int status = -1;
  std::string out, err;
};

inline CommandResult run_command(const std::string& cmd, const std::string& stdin_text = "") {
  static int counter = 0;
  const std::string base = "/tmp/ds4_cmd_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  std::ofstream(base + ".in") << stdin_text;
  const std::string full = cmd + " <" + base + ".in >" + base + ".out 2>" + base + ".err";
  int rc = std::system(full.c_str());
  CommandResult r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  auto slurp = [](const std::string& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  std::remove((base + ".in").c_str());
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

}  // namespace ds4::test
