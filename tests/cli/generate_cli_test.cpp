// The `ds4 generate` contract: JSON with the generated ids (prompt excluded), text and finish reason; a
// failed request (invalid logits) exits non-zero with the error on stderr.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "models/qwen4_fixture.h"
#include "support/run_command.h"
#include "support/safetensors_writer.h"

namespace ds4 {
namespace {
namespace fs = std::filesystem;

std::string join(const std::vector<int32_t>& v) {
  std::string s;
  for (auto t : v) s += (s.empty() ? "" : ",") + std::to_string(t);
  return s;
}

TEST(GenerateCli, GreedyJsonMatchesTheOracle) {
  const auto ref = test::qwen4_reference("text_f16_sharded");
  const auto want = ref["greedy"]["tokens"].get<std::vector<int32_t>>();
  const auto margins = ref["greedy"]["margins"].get<std::vector<double>>();
  auto r = test::run_command(test::ds4_binary() + " generate --model " + test::qwen4_fixture("text_f16_sharded") +
                             " --tokens " + join(ref["greedy"]["prompt"].get<std::vector<int32_t>>()) +
                             " --max-tokens 12 --temperature 0 --ignore-eos --json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  auto got = j["tokens"].get<std::vector<int32_t>>();
  ASSERT_EQ(got.size(), 12u);
  for (size_t i = 0; i < got.size() && margins[i] > test::kMarginClear; i++) EXPECT_EQ(got[i], want[i]) << i;
  EXPECT_EQ(j["finish_reason"], "length");
}

// A copy of a fixture whose lm_head row `row` is `value`: the model then emits invalid logits.
class PoisonedHead : public ::testing::Test {
 protected:
  void poison(float value) {
    dir = fs::temp_directory_path() / ("ds4_poison_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy_file(test::qwen4_fixture("text_f32") + "/config.json", dir / "config.json");
    auto t = test::read_all(test::qwen4_fixture("text_f32"));
    auto& head = t["lm_head.weight"];
    const int64_t H = head.shape[1];
    for (int64_t i = 0; i < H; i++) std::memcpy(head.bytes.data() + (7 * H + i) * 4, &value, 4);
    test::write_safetensors((dir / "model.safetensors").string(), t);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path dir;
};

TEST_F(PoisonedHead, NanLogitsFailGreedyAndSampledRequests) {
  poison(NAN);
  for (const char* mode : {"--temperature 0", "--temperature 0.7 --seed 5"}) {
    auto r = test::run_command(test::ds4_binary() + " generate --model " + dir.string() + " --tokens 5,9,11 " + mode +
                               " --max-tokens 4 --json");
    EXPECT_NE(r.status, 0) << mode;
    EXPECT_NE(r.err.find("invalid_logits"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << "no token may be printed: " << r.out;
  }
}

TEST_F(PoisonedHead, InfLogitsFailToo) {
  poison(INFINITY);  // a row of +inf weights times a mixed hidden state gives +inf or NaN logits
  auto r = test::run_command(test::ds4_binary() + " generate --model " + dir.string() +
                             " --tokens 5,9,11 --temperature 0 --max-tokens 4 --json");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("invalid_logits"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ds4

namespace ds4 {
namespace {

// --backend names a compute backend; one this build lacks is a clear error before anything is loaded.
TEST(GenerateCli, UnknownBackendIsAClearError) {
  auto r = test::run_command(test::ds4_binary() + " generate --model " + test::qwen4_fixture("text_f32") +
                             " --tokens 5,9 --max-tokens 2 --backend nosuch");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("backend 'nosuch' is not available in this build (available: cpu"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ds4
