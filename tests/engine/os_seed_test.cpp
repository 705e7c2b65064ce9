// Seeds drawn for requests without one are reported to clients, who must be able to send them back: in
// JSON read by JavaScript (doubles), only integers below 2^53 survive.
#include <gtest/gtest.h>

#include <set>

#include "engine/sampler.h"

TEST(OsSeed, FitsInADoubleAndVaries) {
  std::set<uint64_t> seen;
  for (int i = 0; i < 200; i++) {
    const uint64_t s = ds4::engine::os_seed();
    EXPECT_LT(s, uint64_t(1) << 53);
    EXPECT_EQ(double(s), double(int64_t(s))) << s;
    EXPECT_EQ(uint64_t(double(s)), s) << "not exact as a double: " << s;
    seen.insert(s);
  }
  EXPECT_GT(seen.size(), 190u);
}
