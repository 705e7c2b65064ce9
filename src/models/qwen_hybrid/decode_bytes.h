// What a batch-1 decode step of the qwen hybrid family moves besides its weights: the sequence state it reads and
// writes. ds4 bench adds these bytes to the weights' for its "with state" bandwidth figure (the usual memory
// bandwidth utilisation counts the key-value cache a step reads; a hybrid model also reads and writes its
// recurrent state).
#pragma once
#include <cstdint>

#include "models/qwen_hybrid/config.h"

namespace ds4::qwen {

// Bytes per element of what a backend stores: the recurrent, conv and indexer state, and the key-value cache.
struct StateElementBytes {
  double state = 4, cache = 4;
};

// Keys the QSA selection lists for the query at position p (qsa_select): every position while the complete blocks
// fit the budget, else the budget's blocks and the incomplete tail block (without an indexer: every position).
int64_t qsa_selected_keys(const Config& c, int64_t p);

// The state bytes the decode step of the token at position p moves, every layer:
//  - a Gated DeltaNet layer reads and writes its recurrent state, reads the conv history (K - 1 rows) and writes
//    the new row;
//  - a sparse-attention layer reads the selected keys and values, writes the token's key and value and its raw
//    indexer key, reads the pooled block keys when it scores them (more complete blocks than the budget), and,
//    when the token completes a block, reads that block's raw indexer keys and writes its pooled key.
// Not counted: the PLE layer's conv history and n-gram context (a few hundred KB at the Flash-Next shape), the
// draft head's cache, and activations.
double decode_state_bytes(const Config& c, int64_t p, StateElementBytes e);

}  // namespace ds4::qwen
