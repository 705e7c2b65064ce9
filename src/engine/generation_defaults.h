// A model directory's generation_config.json as sampling defaults (what transformers' generate would
// use when a request sets nothing): do_sample false means greedy.
#pragma once
#include <string>

#include "engine/sampling_params.h"

namespace ds4::engine {

SamplingParams generation_defaults(const std::string& model_dir);

}  // namespace ds4::engine
