// Reading JSON files with errors that name the file.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace ds4 {

nlohmann::json read_json_file(const std::string& path);  // throws Error(Io|Format)

}  // namespace ds4
