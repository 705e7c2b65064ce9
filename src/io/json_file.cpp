#include "io/json_file.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace ds4 {

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorKind::Io, path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorKind::Format, path + ": malformed JSON: " + e.what());
  }
}

}  // namespace ds4
