// Turns one request's generation events into its OpenAI response: the chunks of a stream as tokens
// arrive, or the whole response at the end. Both come from the same accumulated state, so a streamed
// response concatenates to exactly the whole one. ChatAssembler splits reasoning and tool calls out of the
// text; TextAssembler (legacy completions) passes text through.
#pragma once
#include <memory>
#include <vector>

#include "engine/generator.h"
#include "server/chat_output.h"
#include "server/response_builder.h"

namespace ds4::server {

class ServedModel;

class OutputAssembler {
 public:
  virtual ~OutputAssembler() = default;
  // Chunks that open a stream (chat: the assistant role).
  virtual std::vector<ojson> start_chunks() = 0;
  // Feeds one token; returns the stream chunks it completes (none when its text is still held back).
  virtual std::vector<ojson> on_token(const engine::TokenEvent& ev) = 0;
  // The end of generation: the last delta, the finish chunk and (include_usage) the usage chunk.
  virtual std::vector<ojson> on_done(const engine::GenerationResult& r) = 0;
  // The whole response, after on_done.
  virtual ojson whole() const = 0;
};

struct AssemblerOptions {
  ResponseMeta meta;
  int64_t prompt_tokens = 0;
  int top_logprobs = -1;  // -1: no logprobs
  bool stream = false;    // build stream chunks (a whole response needs none)
  bool include_usage = false;
};

std::unique_ptr<OutputAssembler> make_chat_assembler(const ServedModel& model, AssemblerOptions options,
                                                     ChatOutputOptions output);
std::unique_ptr<OutputAssembler> make_text_assembler(const ServedModel& model, AssemblerOptions options);

// The OpenAI finish_reason for an engine result: "length" stays, a request that made tool calls is
// "tool_calls", anything else (eos, a stop string, a cancelled request) is "stop".
std::string finish_reason_of(const engine::GenerationResult& r, bool made_tool_calls);

}  // namespace ds4::server
