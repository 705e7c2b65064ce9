// Parsing "5,9,11" token lists from the command line.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ds4::cli {

std::vector<int32_t> parse_token_list(const std::string& s);  // throws Error(InvalidArgument)

}  // namespace ds4::cli
