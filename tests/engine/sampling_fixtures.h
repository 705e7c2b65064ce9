// Loads the JSON-lines fixtures that tools/oracle/*.py write under tests/fixtures/sampling/.
#pragma once
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/paths.h"

namespace ds4::test {

inline std::vector<nlohmann::json> load_sampling_fixture(const std::string& name) {
  const std::string path = fixtures_dir() + "/sampling/" + name;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open fixture " + path + " (run tools/oracle/*.py)");
  std::vector<nlohmann::json> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  }
  if (rows.empty()) throw std::runtime_error("fixture " + path + " is empty");
  return rows;
}

}  // namespace ds4::test
