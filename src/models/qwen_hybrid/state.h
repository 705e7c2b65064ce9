// Per-sequence state of the qwen hybrid family: five kinds, all carried across chunks.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "models/model.h"

namespace ds4::qwen {

struct AttnState {
  std::vector<float> keys, values;  // [positions][kv_heads * head_dim], after norm and RoPE
  std::vector<float> index_keys;    // [positions][indexer_head_dim], raw projections
  std::vector<float> block_keys;    // [complete blocks][indexer_head_dim], pooled, normed, rotated
};

struct GdnState {
  std::vector<float> conv;       // [(K-1)][conv_dim]
  std::vector<float> recurrent;  // [value heads][dk][dv]
};

struct PleState {
  std::vector<float> conv;         // [(K-1) * dilation][hc * hidden]
  std::vector<int64_t> context;    // the last ngram_size - 1 token ids (eos before the sequence starts)
};

struct LayerState {
  AttnState attn;
  GdnState gdn;
  PleState ple;
};

class QwenState : public SequenceState {
 public:
  int64_t pos = 0;
  std::vector<LayerState> layers;
  // For the MTP draft head: the final hidden states of the last forward() call [T][H], and the head's own
  // cache with the number of pairs it has consumed.
  std::vector<float> last_hidden;
  AttnState mtp;
  int64_t mtp_pos = 0;

  int64_t position() const override { return pos; }
  std::unique_ptr<SequenceState> clone() const override { return std::make_unique<QwenState>(*this); }
  size_t bytes() const override;
  // The caches (keys, values, index keys, pooled blocks; the draft head's too) are only appended to, so a rewind
  // cuts them back to their marked lengths; what a forward() changes in place (the GDN and PLE states, the n-gram
  // context, the last hidden rows) is copied at the mark.
  bool mark() override;
  void rewind() override;

 private:
  struct Mark {
    bool set = false;
    int64_t pos = 0, mtp_pos = 0;
    std::vector<size_t> lengths;  // per layer: keys, values, index keys, pooled blocks; then the draft head's
    std::vector<GdnState> gdn;
    std::vector<PleState> ple;
    std::vector<float> last_hidden;
  };
  Mark mark_;
};

}  // namespace ds4::qwen
