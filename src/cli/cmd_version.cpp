#include <cstdio>

#include "cli/command.h"

namespace {
ds4::cli::RegisterCommand reg([](CLI::App& app) {
  auto* sub = app.add_subcommand("version", "Print the ds4 version");
  sub->callback([] { std::printf("ds4 0.1.0\n"); });
});
}  // namespace
