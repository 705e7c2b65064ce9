// The qwen4_exp text model on the CPU reference backend.
#pragma once
#include <memory>

#include "backend/cpu/rope.h"
#include "models/model.h"
#include "models/qwen_hybrid/config.h"
#include "models/qwen_hybrid/weights.h"

namespace ds4::qwen {

class QwenHybridModel : public Model {
 public:
  QwenHybridModel(Config c, Weights w);
  const ModelInfo& info() const override { return info_; }
  std::unique_ptr<SequenceState> new_state() const override;
  void forward(SequenceState& state, std::span<const int32_t> tokens, std::vector<float>& logits,
               bool all_positions) const override;
  bool has_draft_head() const override { return w_.mtp.has_value(); }
  void draft(SequenceState& state, std::span<const int32_t> next_tokens, std::vector<float>& logits,
             bool all_positions) const override;
  const Config& config() const { return cfg_; }

 private:
  const Mat& head() const { return cfg_.tie_word_embeddings ? w_.embed : w_.lm_head; }
  Config cfg_;
  Weights w_;
  cpu::RopeTable rope_;
  ModelInfo info_;
};

// backend: "cpu" or a registered backend's name (models/backends.h).
std::unique_ptr<Model> load_qwen_hybrid(const std::string& dir, const nlohmann::json& config, const LogFn& log,
                                        const std::string& backend = "cpu");
std::unique_ptr<Model> random_qwen_hybrid(const nlohmann::json& config, uint64_t seed, const LogFn& log,
                                          const std::string& backend = "cpu");

}  // namespace ds4::qwen
