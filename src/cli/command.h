// Each subcommand of `ds4` lives in its own cmd_*.cpp and registers itself here, so adding one touches no
// other file.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace ds4::cli {

using Registrar = std::function<void(CLI::App&)>;
std::vector<Registrar>& registry();

struct RegisterCommand {
  explicit RegisterCommand(Registrar r) { registry().push_back(std::move(r)); }
};

}  // namespace ds4::cli
