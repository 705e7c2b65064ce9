// Scheduler: every accepted request gets exactly one result; the queue bound refuses the rest; a callback
// returning false cancels at that token; shutdown cancels queued and running work. A fake generate
// function stands in for the model, gated by the test so nothing depends on timing.
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "engine/scheduler.h"

namespace ds4::engine {
namespace {

// Emits `req.max_tokens` tokens (0, 1, 2, ...), each only after the test opens the gate for it.
class GatedGenerator {
 public:
  GenerationResult operator()(const GenerationRequest& req, const TokenCallback& cb) {
    GenerationResult r;
    r.prompt_tokens = int64_t(req.prompt.size());
    r.seed = req.seed.value_or(0);
    {
      std::lock_guard l(mu_);
      ++started_;
    }
    cv_.notify_all();
    for (int32_t i = 0; i < req.max_tokens; ++i) {
      {
        std::unique_lock l(mu_);
        cv_.wait(l, [&] { return open_ > 0 || closed_; });
        if (!closed_) --open_;
      }
      TokenEvent ev{i, std::to_string(i), std::nullopt, {}};
      r.tokens.push_back(i);
      if (!cb(ev)) {
        r.finish_reason = "cancelled";
        return r;
      }
    }
    r.finish_reason = "length";
    return r;
  }
  void open(int n) {
    std::lock_guard l(mu_);
    open_ += n;
    cv_.notify_all();
  }
  void open_all() {
    std::lock_guard l(mu_);
    closed_ = true;
    cv_.notify_all();
  }
  void wait_started(int n) {
    std::unique_lock l(mu_);
    cv_.wait(l, [&] { return started_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int open_ = 0, started_ = 0;
  bool closed_ = false;
};

GenerationRequest req(int64_t max_tokens) {
  GenerationRequest r;
  r.prompt = {1, 2, 3};
  r.max_tokens = max_tokens;
  r.seed = 7;
  return r;
}

TEST(Scheduler, RunsRequestsAndStreamsTokens) {
  GatedGenerator gen;
  gen.open_all();
  Scheduler s([&](const auto& r, const auto& cb) { return gen(r, cb); }, {.workers = 2, .max_queued = 8});
  std::vector<std::promise<GenerationResult>> done(5);
  std::vector<std::vector<int32_t>> seen(5);
  for (int i = 0; i < 5; ++i) {
    auto job = s.submit(
        req(3 + i), [&, i](const TokenEvent& ev) { seen[i].push_back(ev.token); return true; },
        [&, i](GenerationResult r) { done[i].set_value(std::move(r)); });
    ASSERT_TRUE(job);
  }
  for (int i = 0; i < 5; ++i) {
    auto r = done[i].get_future().get();
    EXPECT_EQ(r.finish_reason, "length");
    EXPECT_EQ(r.seed, 7u);
    EXPECT_EQ(seen[i].size(), size_t(3 + i));
    EXPECT_EQ(r.tokens, seen[i]);
  }
  EXPECT_EQ(s.active(), 0u);
  EXPECT_EQ(s.queued(), 0u);
}

TEST(Scheduler, RefusesWhenTheQueueIsFull) {
  GatedGenerator gen;
  Scheduler s([&](const auto& r, const auto& cb) { return gen(r, cb); }, {.workers = 1, .max_queued = 2});
  std::vector<std::promise<GenerationResult>> done(3);
  auto submit = [&](int i) { return s.submit(req(1), nullptr, [&, i](GenerationResult r) { done[i].set_value(r); }); };
  ASSERT_TRUE(submit(0));
  gen.wait_started(1);  // the first is running, so the next two wait
  ASSERT_TRUE(submit(1));
  ASSERT_TRUE(submit(2));
  EXPECT_EQ(s.queued(), 2u);
  EXPECT_EQ(s.active(), 1u);
  EXPECT_FALSE(s.submit(req(1), nullptr, [](GenerationResult) { FAIL() << "refused work must not run"; }));
  gen.open_all();
  for (auto& d : done) EXPECT_EQ(d.get_future().get().finish_reason, "length");
}

TEST(Scheduler, CallbackReturningFalseCancelsAtThatToken) {
  GatedGenerator gen;
  gen.open_all();
  Scheduler s([&](const auto& r, const auto& cb) { return gen(r, cb); }, {});
  std::promise<GenerationResult> done;
  int tokens = 0;
  s.submit(req(100), [&](const TokenEvent&) { return ++tokens < 3; }, [&](GenerationResult r) { done.set_value(r); });
  auto r = done.get_future().get();
  EXPECT_EQ(r.finish_reason, "cancelled");
  EXPECT_EQ(tokens, 3);
  EXPECT_EQ(s.active(), 0u);
}

TEST(Scheduler, CancelledBeforeStartNeverRuns) {
  GatedGenerator gen;
  Scheduler s([&](const auto& r, const auto& cb) { return gen(r, cb); }, {.workers = 1, .max_queued = 4});
  std::promise<GenerationResult> first, second;
  s.submit(req(1), nullptr, [&](GenerationResult r) { first.set_value(r); });
  gen.wait_started(1);
  bool ran = false;
  auto job = s.submit(req(1), [&](const TokenEvent&) { ran = true; return true; },
                      [&](GenerationResult r) { second.set_value(r); });
  job->cancel();
  EXPECT_EQ(s.queued(), 0u);
  gen.open_all();
  EXPECT_EQ(first.get_future().get().finish_reason, "length");
  EXPECT_EQ(second.get_future().get().finish_reason, "cancelled");
  EXPECT_FALSE(ran);
}

TEST(Scheduler, ErrorsBecomeResults) {
  Scheduler s([](const GenerationRequest&, const TokenCallback&) -> GenerationResult {
    throw Error(ErrorKind::InvalidLogits, "NaN at position 4, index 17");
  }, {});
  std::promise<GenerationResult> done;
  s.submit(req(1), nullptr, [&](GenerationResult r) { done.set_value(r); });
  auto r = done.get_future().get();
  EXPECT_EQ(r.finish_reason, "error");
  ASSERT_TRUE(r.error);
  EXPECT_EQ(r.error->kind(), ErrorKind::InvalidLogits);
}

TEST(Scheduler, ShutdownCancelsQueuedAndRunning) {
  GatedGenerator gen;
  auto s = std::make_unique<Scheduler>([&](const auto& r, const auto& cb) { return gen(r, cb); },
                                       SchedulerOptions{.workers = 1, .max_queued = 4});
  std::promise<GenerationResult> a, b;
  auto running = s->submit(req(5), nullptr, [&](GenerationResult r) { a.set_value(r); });
  gen.wait_started(1);
  s->submit(req(5), nullptr, [&](GenerationResult r) { b.set_value(r); });
  std::thread stopper([&] { s->shutdown(); });
  // Once shutdown has flagged the running request, let it reach its next token, where it stops.
  for (int i = 0; i < 100000 && !running->cancelled(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(running->cancelled());
  gen.open_all();
  stopper.join();
  EXPECT_EQ(a.get_future().get().finish_reason, "cancelled");
  EXPECT_EQ(b.get_future().get().finish_reason, "cancelled");
  EXPECT_FALSE(s->submit(req(1), nullptr, [](GenerationResult) {}));
}

}  // namespace
}  // namespace ds4::engine
