// Speculative decoding with the MTP draft head changes speed, never output (shared/SAMPLING.md): for the
// same seed, the emitted tokens, text and finish reason equal plain decoding's, greedy and sampled alike.
#include <gtest/gtest.h>

#include "engine/generator.h"
#include "models/model.h"
#include "support/paths.h"
#include "text/tokenizer.h"

namespace ds4 {
namespace {

TEST(Speculative, EmitsExactlyThePlainDecodingStream) {
  const std::string dir = test::source_dir() + "/models/tiny-flash-next";
  auto model = load_model(dir);
  ASSERT_TRUE(model->has_draft_head());
  auto tok = text::Tokenizer::from_file(dir + "/tokenizer.json");
  struct Case {
    double temperature;
    int top_k;
    double top_p, presence;
    uint64_t seed;
    const char* stop;
  };
  int64_t drafted = 0, accepted = 0;
  for (const Case& c : {Case{0.0, 0, 1.0, 0.0, 1, ""}, Case{0.7, 20, 0.8, 0.0, 42, ""}, Case{1.0, 0, 1.0, 0.0, 7, ""},
                        Case{0.9, 0, 0.95, 0.5, (1ull << 63) + 3, ""}, Case{0.0, 0, 1.0, 0.0, 2, " the"}}) {
    engine::GenerationRequest req;
    req.prompt = tok.encode("<|im_start|>user\nTell me a story.<|im_end|>\n<|im_start|>assistant\n");
    req.max_tokens = 40;
    req.sampling.temperature = c.temperature;
    req.sampling.top_k = c.top_k;
    req.sampling.top_p = c.top_p;
    req.sampling.presence_penalty = c.presence;
    req.seed = c.seed;
    if (*c.stop) req.stop = {c.stop};
    auto plain = engine::generate(*model, &tok, req);
    req.speculative = true;
    std::string streamed;
    auto spec = engine::generate(*model, &tok, req, [&](const engine::TokenEvent& ev) {
      streamed += ev.text;
      return true;
    });
    EXPECT_EQ(spec.tokens, plain.tokens) << "seed " << c.seed;
    EXPECT_EQ(spec.text, plain.text);
    EXPECT_EQ(streamed, plain.text);
    EXPECT_EQ(spec.finish_reason, plain.finish_reason);
    drafted += spec.drafted;
    accepted += spec.accepted;
  }
  std::printf("speculative: %lld of %lld drafts accepted\n", (long long)accepted, (long long)drafted);
  EXPECT_GT(drafted, 0);
  EXPECT_GT(accepted, 0) << "the draft head never agreed: is it wired correctly?";
}

}  // namespace
}  // namespace ds4
