#include <cstdio>
#include <exception>

#include "cli/command.h"
#include "core/error.h"

namespace ds4::cli {
std::vector<Registrar>& registry() {
  static std::vector<Registrar> r;
  return r;
}
}  // namespace ds4::cli

int main(int argc, char** argv) {
  CLI::App app{"ds4: inference server for hybrid mixture-of-experts language models"};
  app.require_subcommand(1);
  for (auto& reg : ds4::cli::registry()) reg(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ds4::Error& e) {
    std::fprintf(stderr, "error: %s: %s\n", ds4::error_kind_name(e.kind()), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
