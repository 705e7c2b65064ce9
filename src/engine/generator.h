// One request's generation loop over one sequence: prefill, then decode token by token with the classic
// sampler, streaming text through the incremental decoder and the stop-string matcher. The scheduler (and
// the CLI) call this; it owns no threads.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/logprobs.h"
#include "engine/sampling_params.h"
#include "models/model.h"

namespace ds4::text {
class Tokenizer;
}

namespace ds4::engine {

struct GenerationRequest {
  std::vector<int32_t> prompt;  // token ids, already rendered and tokenized
  int64_t max_tokens = 256;
  SamplingParams sampling;
  std::optional<uint64_t> seed;    // absent: drawn from the OS and reported in the result
  std::vector<std::string> stop;   // stop strings, matched on text
  bool ignore_eos = false;
  // Draft one token ahead with the model's MTP head and verify it in the same forward as the last token.
  // Never changes the emitted tokens (shared/SAMPLING.md), only how many forwards they take. Ignored when
  // the model has no draft head.
  bool speculative = false;
  int top_logprobs = -1;           // -1: no logprobs; 0..20: the chosen token's logprob and this many alternatives
};

// One emitted token. `text` is the text released with it (may be empty while a partial UTF-8 character or a
// possible stop string is held back). A last event with token == -1 carries text released at the end.
struct TokenEvent {
  int32_t token;
  std::string text;
  std::optional<double> logprob;
  std::vector<TokenLogprob> top;
};

struct GenerationResult {
  std::vector<int32_t> tokens;  // generated ids (an eos that ended generation and a matched stop string's
                                // tokens included; their text is not)
  std::string text;
  std::string finish_reason;    // "stop" (eos or stop string), "length", "cancelled", or "error"
  int64_t prompt_tokens = 0;
  uint64_t seed = 0;
  std::optional<Error> error;   // set when finish_reason == "error" (e.g. invalid_logits)
  int64_t drafted = 0, accepted = 0;  // speculative decoding: drafts verified, and of those accepted
};

// Called for every emitted token; returning false cancels the request at that token (client gone).
using TokenCallback = std::function<bool(const TokenEvent&)>;

// The sequence state is created here and dropped at the end, so an error never leaves a half-updated
// state behind. tokenizer may be null (token-only models): then no text, no stop strings.
GenerationResult generate(const Model& model, const text::Tokenizer* tokenizer, const GenerationRequest& req,
                          const TokenCallback& on_token = nullptr);

}  // namespace ds4::engine
