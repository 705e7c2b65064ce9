#include <gtest/gtest.h>

#include "core/error.h"

TEST(Error, KindNamesAreStable) {
  // Server responses and CLI messages use these names; changing one is an API change.
  EXPECT_STREQ(ds4::error_kind_name(ds4::ErrorKind::InvalidLogits), "invalid_logits");
  EXPECT_STREQ(ds4::error_kind_name(ds4::ErrorKind::Shape), "shape_mismatch");
  ds4::Error e(ds4::ErrorKind::MissingTensor, "model.x missing");
  EXPECT_EQ(e.kind(), ds4::ErrorKind::MissingTensor);
  EXPECT_STREQ(e.what(), "model.x missing");
}
