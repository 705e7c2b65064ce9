// Picks the model family from config.json's model_type.
#include <filesystem>

#include "core/error.h"
#include "io/json_file.h"
#include "models/model.h"
#include "models/qwen_hybrid/model.h"

namespace ds4 {

std::unique_ptr<Model> load_model(const std::string& dir, const LogFn& log) {
  if (!std::filesystem::is_directory(dir)) throw Error(ErrorKind::Io, dir + ": not a model directory");
  const std::string path = dir + "/config.json";
  nlohmann::json j = read_json_file(path);
  if (!j.is_object() || !j.contains("model_type") || !j["model_type"].is_string())
    throw Error(ErrorKind::Format, path + ": no model_type string");
  const std::string type = j["model_type"];
  if (type == "qwen4_exp" || type == "qwen4_exp_text") return qwen::load_qwen_hybrid(dir, j, log);
  if (type == "deepseek_v4" || type == "glm5_next" || type == "qwen3_next" || type == "qwen3_5" || type == "qwen3_5_moe")
    throw Error(ErrorKind::Unsupported, path + ": model_type '" + type + "' is planned but not supported yet");
  throw Error(ErrorKind::Unsupported, path + ": unknown model_type '" + type +
                                          "' (supported: qwen4_exp, qwen4_exp_text)");
}

std::unique_ptr<Model> random_model(const nlohmann::json& j, uint64_t seed, const LogFn& log) {
  const std::string type = j.value("model_type", "");
  if (type == "qwen4_exp" || type == "qwen4_exp_text") return qwen::random_qwen_hybrid(j, seed, log);
  throw Error(ErrorKind::Unsupported, "random weights: unknown model_type '" + type + "'");
}

}  // namespace ds4

namespace ds4 {

void Model::draft(SequenceState&, std::span<const int32_t>, std::vector<float>&, bool) const {
  throw Error(ErrorKind::Unsupported, "this model has no draft head");
}

}  // namespace ds4
