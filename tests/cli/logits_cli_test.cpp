// The `ds4 logits` contract: a float32 .npy of shape [tokens, vocab] matching the reference, chunked or not.
#include <gtest/gtest.h>

#include "io/npy.h"
#include "models/qwen4_fixture.h"
#include "support/run_command.h"

namespace ds4 {
namespace {

TEST(LogitsCli, WritesReferenceLogitsForEveryPosition) {
  const auto ref = test::qwen4_reference("vl_bf16");
  const auto seq = ref["sequences"][0].get<std::vector<int32_t>>();
  std::string toks;
  for (auto t : seq) toks += (toks.empty() ? "" : ",") + std::to_string(t);
  const auto want = read_npy_f32(test::qwen4_fixture("vl_bf16") + "/logits_0.npy");
  for (const char* chunk : {"", " --chunk 7"}) {
    const std::string out = "/tmp/ds4_logits_cli_" + std::to_string(::getpid()) + ".npy";
    auto r = test::run_command(test::ds4_binary() + " logits --model " + test::qwen4_fixture("vl_bf16") + " --tokens " +
                               toks + " --out " + out + chunk);
    ASSERT_EQ(r.status, 0) << r.err;
    auto got = read_npy_f32(out);
    std::remove(out.c_str());
    ASSERT_EQ(got.shape, want.shape);
    const double scale = test::max_abs(want.data);
    EXPECT_LE(test::max_rel_diff(got.data.data(), want.data.data(), got.data.size(), scale), test::kParityBound);
  }
}

TEST(LogitsCli, BadInputsFailWithAMessage) {
  const std::string model = test::qwen4_fixture("text_f32");
  auto r = test::run_command(test::ds4_binary() + " logits --model " + model + " --tokens 5,x,7 --out /tmp/x.npy");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("'x' is not a token id"), std::string::npos) << r.err;
  r = test::run_command(test::ds4_binary() + " logits --model " + model + " --tokens 5,9999 --out /tmp/x.npy");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("outside the vocabulary"), std::string::npos) << r.err;
  r = test::run_command(test::ds4_binary() + " logits --model /nonexistent --tokens 5 --out /tmp/x.npy");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("/nonexistent"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ds4
