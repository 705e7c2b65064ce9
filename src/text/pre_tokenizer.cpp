#include "text/pre_tokenizer.h"

#include <stdexcept>

#include "text/byte_level_alphabet.h"
#include "text/regex.h"

namespace ds4::text {
namespace {

using Span = PieceList::Span;

// The pattern GPT-2 (and HF's ByteLevel with use_regex) splits words with.
constexpr std::string_view kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

// HF's SplitDelimiterBehavior.
enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// One cut of a piece: a stretch the regex matched (is_match) or the text between matches.
struct Cut {
  Span span;
  bool is_match;
};

// Cuts `piece` (at `base` in the buffer) by `regex`, covering the whole piece, as HF's Pattern for a
// regex does; `invert` swaps which stretches count as matches.
void cut_by(const Regex& regex, std::string_view piece, uint32_t base, bool invert, std::vector<Cut>& cuts) {
  thread_local std::vector<Regex::Match> matches;
  matches.clear();
  cuts.clear();
  regex.find_all(piece, matches);
  uint32_t prev = 0;
  for (const auto& m : matches) {
    auto b = static_cast<uint32_t>(m.begin), e = static_cast<uint32_t>(m.end);
    if (prev != b) cuts.push_back({{base + prev, base + b}, invert});
    cuts.push_back({{base + b, base + e}, !invert});
    prev = e;
  }
  if (prev != piece.size()) cuts.push_back({{base + prev, base + static_cast<uint32_t>(piece.size())}, invert});
}

// Applies a delimiter behaviour to the cuts of one piece (HF's NormalizedString::split) and appends the
// resulting non-empty pieces.
void emit(const std::vector<Cut>& cuts, Behavior behavior, std::vector<Span>& out) {
  auto push = [&](Span s) {
    if (s.end > s.begin) out.push_back(s);
  };
  switch (behavior) {
    case Behavior::Isolated:
      for (const auto& c : cuts) push(c.span);
      return;
    case Behavior::Removed:
      for (const auto& c : cuts)
        if (!c.is_match) push(c.span);
      return;
    case Behavior::Contiguous:
    case Behavior::MergedWithPrevious: {
      std::vector<Span> merged;
      bool prev_match = false;
      for (const auto& c : cuts) {
        bool join = behavior == Behavior::Contiguous ? c.is_match == prev_match : c.is_match && !prev_match;
        if (join && !merged.empty()) {
          merged.back().end = c.span.end;
        } else {
          merged.push_back(c.span);
        }
        prev_match = c.is_match;
      }
      for (const auto& s : merged) push(s);
      return;
    }
    case Behavior::MergedWithNext: {
      std::vector<Span> merged;  // built back to front
      bool prev_match = false;
      for (auto it = cuts.rbegin(); it != cuts.rend(); ++it) {
        if (it->is_match && !prev_match && !merged.empty()) {
          merged.back().begin = it->span.begin;
        } else {
          merged.push_back(it->span);
        }
        prev_match = it->is_match;
      }
      for (auto it = merged.rbegin(); it != merged.rend(); ++it) push(*it);
      return;
    }
  }
}

class Split : public PreTokenizer {
 public:
  Split(std::string_view onig_pattern, Behavior behavior, bool invert)
      : regex_(onig_pattern), behavior_(behavior), invert_(invert) {}

  void apply(PieceList& pl, PieceList& scratch) const override {
    thread_local std::vector<Cut> cuts;
    scratch.pieces.clear();
    for (size_t i = 0; i < pl.pieces.size(); ++i) {
      cut_by(regex_, pl.piece(i), pl.pieces[i].begin, invert_, cuts);
      emit(cuts, behavior_, scratch.pieces);
    }
    pl.pieces.swap(scratch.pieces);
  }

 private:
  Regex regex_;
  Behavior behavior_;
  bool invert_;
};

class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space) {
    if (use_regex) regex_ = std::make_unique<Regex>(kGpt2Pattern);
  }

  void apply(PieceList& pl, PieceList& scratch) const override {
    thread_local std::vector<Cut> cuts;
    thread_local std::string prefixed;
    scratch.clear();
    auto map_out = [&](std::string_view bytes) {
      auto begin = static_cast<uint32_t>(scratch.text.size());
      byte_level::encode(bytes, scratch.text);
      scratch.pieces.push_back({begin, static_cast<uint32_t>(scratch.text.size())});
    };
    for (size_t i = 0; i < pl.pieces.size(); ++i) {
      std::string_view piece = pl.piece(i);
      if (add_prefix_space_ && piece.front() != ' ') {
        prefixed.assign(1, ' ');
        prefixed += piece;
        piece = prefixed;
      }
      if (!regex_) {
        map_out(piece);
        continue;
      }
      cut_by(*regex_, piece, 0, false, cuts);
      for (const auto& c : cuts)
        if (c.span.end > c.span.begin) map_out(piece.substr(c.span.begin, c.span.end - c.span.begin));
    }
    std::swap(pl, scratch);
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

class Sequence : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void apply(PieceList& pl, PieceList& scratch) const override {
    for (const auto& p : parts_) p->apply(pl, scratch);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

Behavior behavior_of(const JsonNode& node) {
  std::string b = node.str();
  if (b == "Removed") return Behavior::Removed;
  if (b == "Isolated") return Behavior::Isolated;
  if (b == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::MergedWithNext;
  if (b == "Contiguous") return Behavior::Contiguous;
  node.fail("unknown split behavior '" + b + "'");
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonNode& node) {
  std::string type = node.at("type").str();
  if (type == "Split") {
    JsonNode pattern = node.at("pattern");
    try {
      return std::make_unique<Split>(onig_pattern_of(pattern), behavior_of(node.at("behavior")), node.bool_or("invert", false));
    } catch (const std::invalid_argument& e) {
      pattern.fail(e.what());
    }
  }
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevel>(node.bool_or("add_prefix_space", true), node.bool_or("use_regex", true));
  }
  if (type == "Sequence") {
    JsonNode list = node.at("pretokenizers");
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (size_t i = 0; i < list.array().size(); ++i) parts.push_back(make_pre_tokenizer(list.element(i)));
    return std::make_unique<Sequence>(std::move(parts));
  }
  node.at("type").fail("unsupported pre_tokenizer type '" + type + "' (supported: Split, ByteLevel, Sequence)");
}

}  // namespace ds4::text
