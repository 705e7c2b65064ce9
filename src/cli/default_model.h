// The model ds4 uses when no --model is given: the trained model shipped in the repository, or (until it
// exists) a committed oracle fixture.
#pragma once
#include <string>

namespace ds4::cli {

std::string default_model_dir();

}  // namespace ds4::cli
