#include "cli/token_list.h"

#include <charconv>

#include "core/error.h"

namespace ds4::cli {

std::vector<int32_t> parse_token_list(const std::string& s) {
  std::vector<int32_t> out;
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    std::string item = s.substr(i, j - i);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    int32_t v = 0;
    auto [p, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || p != item.data() + item.size() || v < 0)
      throw Error(ErrorKind::InvalidArgument, "--tokens: '" + item + "' is not a token id (expected e.g. 5,9,11)");
    out.push_back(v);
    i = j + 1;
  }
  return out;
}

}  // namespace ds4::cli
