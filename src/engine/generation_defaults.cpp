#include "engine/generation_defaults.h"

#include <filesystem>

#include "io/json_file.h"

namespace ds4::engine {

SamplingParams generation_defaults(const std::string& model_dir) {
  SamplingParams p;
  const std::string path = model_dir + "/generation_config.json";
  if (!std::filesystem::exists(path)) return p;
  const auto g = read_json_file(path);
  if (!g.is_object()) return p;
  if (g.value("do_sample", true) == false) {
    p.temperature = 0.0;
    return p;
  }
  if (g.contains("temperature") && g["temperature"].is_number()) p.temperature = g["temperature"].get<double>();
  if (g.contains("top_k") && g["top_k"].is_number_integer()) p.top_k = g["top_k"].get<int>();
  if (g.contains("top_p") && g["top_p"].is_number()) p.top_p = g["top_p"].get<double>();
  if (g.contains("min_p") && g["min_p"].is_number()) p.min_p = g["min_p"].get<double>();
  return p;
}

}  // namespace ds4::engine
