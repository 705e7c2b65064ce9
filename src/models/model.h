// What the engine sees of a model family: a small lifecycle (create a sequence state, run a chunk of tokens
// through it, copy it), independent of the family and the backend.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

namespace ds4 {

struct ModelInfo {
  std::string family;      // "qwen_hybrid"
  std::string model_type;  // config.json model_type
  int64_t vocab_size = 0;
  int64_t max_positions = 0;
  std::vector<int64_t> eos_ids;
  int64_t total_params = 0;   // every weight
  int64_t active_params = 0;  // weights one decoded token reads (routed experts: top-k of them)
  // Bytes of sequence state (caches, recurrent state) the batch-1 decode step of the token at a position reads and
  // writes besides the weights, in the backend's storage formats; empty where the family does not say.
  std::function<double(int64_t)> decode_state_bytes;
};

// A greedy pick made by the model (Model::forward_greedy).
struct GreedyPick {
  enum class Row { Ok, NaN, PosInf, AllNegInf };
  Row row = Row::Ok;
  int64_t index = 0;  // Ok: the token; NaN / PosInf: the row's first NaN or +inf (whichever comes first)
};

class SequenceState {
 public:
  virtual ~SequenceState() = default;
  virtual int64_t position() const = 0;  // tokens consumed so far
  virtual std::unique_ptr<SequenceState> clone() const = 0;
  virtual size_t bytes() const = 0;

  // Speculative decoding's way back: mark() remembers the state as it is now, rewind() returns it there (to the
  // latest mark; every call after a rewind runs as if the calls since the mark had not been made). A state that
  // can do this more cheaply than clone() returns true from mark(); false (the default: no mark is taken, and
  // rewind() may not be called): the caller keeps a clone instead.
  virtual bool mark() { return false; }
  virtual void rewind() {}
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelInfo& info() const = 0;
  virtual std::unique_ptr<SequenceState> new_state() const = 0;
  // Consumes `tokens` (any count >= 1) from the state's position. Writes [tokens, vocab] logits when
  // all_positions, else only the last row [vocab]. A chunked run equals one call over all tokens.
  virtual void forward(SequenceState& state, std::span<const int32_t> tokens, std::vector<float>& logits,
                       bool all_positions) const = 0;

  // forward() for the greedy token alone, for a backend that can pick it where the logits are, without copying
  // the row out: the last row's first index of the maximum, or why the row is not a distribution (SAMPLING.md
  // steps 1 and 3; engine::check_greedy_pick turns that into the sampler's error). Returns false, having done
  // nothing, when the backend cannot: the caller runs forward() and picks from the row.
  virtual bool forward_greedy(SequenceState& state, std::span<const int32_t> tokens, GreedyPick& pick) const {
    (void)state, (void)tokens, (void)pick;
    return false;
  }

  // forward() with every row's greedy pick (picks[i] for the row of tokens[i]) instead of the rows, for
  // speculative decoding's verification when the sampler would take each row's argmax as it is. Returns false,
  // having done nothing, when the backend cannot (for this many tokens).
  virtual bool forward_greedy_rows(SequenceState& state, std::span<const int32_t> tokens,
                                   std::span<GreedyPick> picks) const {
    (void)state, (void)tokens, (void)picks;
    return false;
  }

  // The draft head for speculative decoding (MTP), when the checkpoint carries one.
  virtual bool has_draft_head() const { return false; }
  // Feeds the draft head the pairs (h_s, x_{s+1}) for the positions of the last forward() on this state:
  // next_tokens[i] is the token that followed its i-th position (so at most as many as that call had).
  // Writes the draft logits (predicting x_{s+2}) of the last pair, or of every pair when all_positions.
  virtual void draft(SequenceState& state, std::span<const int32_t> next_tokens, std::vector<float>& logits,
                     bool all_positions) const;
  // draft() for the last pair's greedy guess alone, picked where the logits are (the row's first index of the
  // maximum, as forward_greedy). Returns false, having done nothing, when the backend cannot.
  virtual bool draft_greedy(SequenceState& state, std::span<const int32_t> next_tokens, GreedyPick& pick) const {
    (void)state, (void)next_tokens, (void)pick;
    return false;
  }
};

using LogFn = std::function<void(const std::string&)>;

struct LoadOptions {
  // "cpu" (the reference backend, always there) or a backend registered at startup (models/backends.h):
  // "cuda" when the binary is built with the CUDA backend.
  std::string backend = "cpu";
};

// Reads DIR/config.json, picks the family by model_type, loads and validates every tensor.
std::unique_ptr<Model> load_model(const std::string& dir, const LogFn& log = nullptr, const LoadOptions& o = {});

// A model of the config's shapes with random weights from a seed (for benchmarks of full-size shapes).
std::unique_ptr<Model> random_model(const nlohmann::json& config, uint64_t seed, const LogFn& log = nullptr,
                                    const LoadOptions& o = {});

}  // namespace ds4
