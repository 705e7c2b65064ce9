// PLE (per-layer embedding): hashed n-gram embeddings of the token ids, projected to a value and one key per
// hyper-connection stream, gated by each stream's normalised activations, then a dilated depthwise conv adds
// local lexical context. N-grams never cross an eos token; the last ngram_size - 1 ids carry across chunks.
#pragma once
#include <cstdint>

#include "models/qwen_hybrid/state.h"
#include "models/qwen_hybrid/weights.h"

namespace ds4::qwen {

void init_ple_state(PleState& s, const Config& c);

// The n-gram table rows for each token of the chunk: [T][(ngram_size-1) * heads_per_ngram]. Updates the
// carried context.
std::vector<int64_t> ple_ngram_rows(const PleWeights& w, const Config& c, PleState& s, const int32_t* tokens, int64_t T);

// x: the stream [T][hc*H]; writes the PLE output [T][hc*H] to be added to it.
void ple_forward(const PleWeights& w, const Config& c, PleState& s, const float* x, const int32_t* tokens, int64_t T,
                 float* out);

}  // namespace ds4::qwen
