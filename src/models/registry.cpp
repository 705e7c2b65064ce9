// Picks the model family from config.json's model_type.
#include <filesystem>
#include <map>
#include <mutex>

#include "core/error.h"
#include "io/json_file.h"
#include "models/backends.h"
#include "models/model.h"
#include "models/qwen_hybrid/model.h"

namespace ds4 {
namespace {

std::map<std::string, BackendFactories>& registry() {
  static std::map<std::string, BackendFactories> r;
  return r;
}
std::mutex registry_mutex;

}  // namespace

void register_backend(const std::string& name, BackendFactories f) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  registry()[name] = std::move(f);
}

std::vector<std::string> backend_names() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  std::vector<std::string> out{"cpu"};
  for (auto& [name, f] : registry()) out.push_back(name);
  return out;
}

const BackendFactories& backend(const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    auto it = registry().find(name);
    if (it != registry().end()) return it->second;
  }
  std::string known;
  for (auto& n : backend_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(ErrorKind::Unsupported, "backend '" + name + "' is not available in this build (available: " + known + ")");
}

std::unique_ptr<Model> load_model(const std::string& dir, const LogFn& log, const LoadOptions& o) {
  if (o.backend != "cpu") backend(o.backend);  // an unknown backend fails before anything is read
  if (!std::filesystem::is_directory(dir)) throw Error(ErrorKind::Io, dir + ": not a model directory");
  const std::string path = dir + "/config.json";
  nlohmann::json j = read_json_file(path);
  if (!j.is_object() || !j.contains("model_type") || !j["model_type"].is_string())
    throw Error(ErrorKind::Format, path + ": no model_type string");
  const std::string type = j["model_type"];
  if (type == "qwen4_exp" || type == "qwen4_exp_text") return qwen::load_qwen_hybrid(dir, j, log, o.backend);
  if (type == "deepseek_v4" || type == "glm5_next" || type == "qwen3_next" || type == "qwen3_5" || type == "qwen3_5_moe")
    throw Error(ErrorKind::Unsupported, path + ": model_type '" + type + "' is planned but not supported yet");
  throw Error(ErrorKind::Unsupported, path + ": unknown model_type '" + type +
                                          "' (supported: qwen4_exp, qwen4_exp_text)");
}

std::unique_ptr<Model> random_model(const nlohmann::json& j, uint64_t seed, const LogFn& log, const LoadOptions& o) {
  if (o.backend != "cpu") backend(o.backend);
  const std::string type = j.value("model_type", "");
  if (type == "qwen4_exp" || type == "qwen4_exp_text") return qwen::random_qwen_hybrid(j, seed, log, o.backend);
  throw Error(ErrorKind::Unsupported, "random weights: unknown model_type '" + type + "'");
}

}  // namespace ds4

namespace ds4 {

void Model::draft(SequenceState&, std::span<const int32_t>, std::vector<float>&, bool) const {
  throw Error(ErrorKind::Unsupported, "this model has no draft head");
}

}  // namespace ds4
