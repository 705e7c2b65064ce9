// Splits generated text into reasoning (inside the model's think tags) and content, incrementally, so the
// streamed pieces and the whole text give the same split. Reasoning is recognised only at the start of the
// output (after optional whitespace), or from the first token when the prompt already opened the block
// (templates that end the generation prompt with "<think>\n"). Whitespace right after either tag is
// dropped; a think tag later in the content is content.
#pragma once
#include <string>
#include <string_view>

namespace ds4::server {

struct ReasoningSplit {
  std::string reasoning;
  std::string content;
};

class ReasoningParser {
 public:
  ReasoningParser(std::string open_tag, std::string close_tag, bool starts_inside);
  ReasoningSplit feed(std::string_view text);
  // End of output: releases what was held (an unfinished tag is text of the part it was in).
  ReasoningSplit finish();

 private:
  enum class State { Start, Reasoning, Content };
  void drain(ReasoningSplit& out);

  std::string open_, close_;
  State state_;
  bool skip_space_;
  std::string held_;
};

}  // namespace ds4::server
