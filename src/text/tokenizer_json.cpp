#include "text/tokenizer_json.h"

#include <fstream>

#include "core/error.h"

namespace ds4::text {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(ErrorKind::Tokenizer, "tokenizer file '" + path + "': " + what);
}

using json = nlohmann::json;

// Builds the document like nlohmann's DOM parser, but diverts model.vocab and model.merges.
class Reader : public json::json_sax_t {
 public:
  explicit Reader(TokenizerJson& out) : out_(out) {}

  bool null() override { return value(nullptr); }
  bool boolean(bool v) override { return value(v); }
  bool number_integer(json::number_integer_t v) override { return integer(v); }
  bool number_unsigned(json::number_unsigned_t v) override {
    return integer(v > static_cast<uint64_t>(INT64_MAX) ? -1 : static_cast<int64_t>(v));
  }
  bool number_float(json::number_float_t v, const std::string&) override {
    if (mode_ == Mode::Vocab) return vocab_value(0, false);
    if (mode_ == Mode::Merges) return merge_other();
    return value(v);
  }
  bool string(std::string& v) override {
    if (mode_ == Mode::Vocab) return vocab_value(0, false);
    if (mode_ == Mode::Merges) return merge_string(v);
    return value(std::move(v));
  }
  bool binary(json::binary_t& v) override { return value(std::move(v)); }

  bool key(std::string& k) override {
    if (mode_ == Mode::Vocab && nested_ == 0) {
      pending_token_ = std::move(k);
      return true;
    }
    key_ = std::move(k);
    return true;
  }

  bool start_object(std::size_t) override {
    if (mode_ != Mode::None) return enter_nested(/*object=*/true);
    if (at_model_member("vocab")) {
      place(json::object());
      mode_ = Mode::Vocab;
      return true;
    }
    return open(json::object());
  }
  bool end_object() override {
    if (mode_ != Mode::None) return leave();
    return close();
  }
  bool start_array(std::size_t) override {
    if (mode_ != Mode::None) return enter_nested(/*object=*/false);
    if (at_model_member("merges")) {
      place(json::array());
      mode_ = Mode::Merges;
      return true;
    }
    return open(json::array());
  }
  bool end_array() override {
    if (mode_ != Mode::None) return leave();
    return close();
  }

  bool parse_error(std::size_t, const std::string&, const json::exception& e) override { throw e; }

 private:
  enum class Mode { None, Vocab, Merges };

  // Whether the container starting now is member `name` of the top-level "model" object.
  bool at_model_member(const char* name) const {
    return stack_.size() == 2 && key_ == name && stack_names_[1] == "model";
  }

  json* place(json v) {
    if (stack_.empty()) {
      out_.doc = std::move(v);
      return &out_.doc;
    }
    json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    json& slot = parent[key_];
    slot = std::move(v);
    return &slot;
  }
  bool value(json v) {
    place(std::move(v));
    return true;
  }
  bool open(json v) {
    std::string name = stack_.empty() || stack_.back()->is_array() ? std::string() : key_;
    stack_.push_back(place(std::move(v)));
    stack_names_.push_back(std::move(name));
    return true;
  }
  bool close() {
    stack_.pop_back();
    stack_names_.pop_back();
    return true;
  }

  bool integer(int64_t v) {
    if (mode_ == Mode::Vocab) return vocab_value(v, true);
    if (mode_ == Mode::Merges) return merge_other();
    return value(v);
  }

  bool vocab_value(int64_t id, bool is_integer) {
    if (nested_ > 0) return true;
    auto offset = static_cast<uint32_t>(out_.vocab_text.size());
    out_.vocab_text += pending_token_;
    out_.vocab.push_back({offset, static_cast<uint32_t>(pending_token_.size()), id, is_integer});
    return true;
  }

  // Inside model.merges: a string at depth 0 is a "a b" line; strings inside a nested array are a pair.
  bool merge_string(const std::string& s) {
    auto offset = static_cast<uint32_t>(out_.merges_text.size());
    out_.merges_text += s;
    auto len = static_cast<uint32_t>(s.size());
    if (nested_ == 0) {
      out_.merges.push_back({offset, len, 0, 0, TokenizerJson::MergeForm::Line});
    } else if (nested_ == 1 && pair_items_ == 0) {
      out_.merges.back().a_offset = offset;
      out_.merges.back().a_len = len;
      ++pair_items_;
    } else if (nested_ == 1 && pair_items_ == 1) {
      out_.merges.back().b_offset = offset;
      out_.merges.back().b_len = len;
      ++pair_items_;
    } else {
      merge_other();
    }
    return true;
  }
  bool merge_other() {
    if (nested_ == 0) {
      out_.merges.push_back({0, 0, 0, 0, TokenizerJson::MergeForm::Malformed});
    } else {
      out_.merges.back().form = TokenizerJson::MergeForm::Malformed;
    }
    return true;
  }

  bool enter_nested(bool object) {
    if (mode_ == Mode::Vocab && nested_ == 0) vocab_value(0, false);  // an object or array as an id
    if (mode_ == Mode::Merges) {
      if (nested_ == 0) {
        out_.merges.push_back({0, 0, 0, 0, object ? TokenizerJson::MergeForm::Malformed : TokenizerJson::MergeForm::Pair});
        pair_items_ = 0;
      } else {
        merge_other();
      }
    }
    ++nested_;
    return true;
  }
  bool leave() {
    if (nested_ == 0) {  // the end of model.vocab or model.merges itself
      mode_ = Mode::None;
      return true;
    }
    --nested_;
    if (mode_ == Mode::Merges && nested_ == 0 && pair_items_ != 2) out_.merges.back().form = TokenizerJson::MergeForm::Malformed;
    return true;
  }

  TokenizerJson& out_;
  std::vector<json*> stack_;
  std::vector<std::string> stack_names_;  // each open container's key in its parent ("" in arrays)
  std::string key_, pending_token_;
  Mode mode_ = Mode::None;
  int nested_ = 0;      // containers open inside vocab or merges
  int pair_items_ = 0;  // strings seen in the current merge pair
};

}  // namespace

TokenizerJson read_tokenizer_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path, "cannot be opened for reading");
  std::string text(static_cast<size_t>(in.tellg()), '\0');
  in.seekg(0);
  if (!in.read(text.data(), static_cast<std::streamsize>(text.size()))) fail(path, "read error");
  TokenizerJson out;
  Reader reader(out);
  try {
    json::sax_parse(text, &reader);
  } catch (const json::exception& e) {
    fail(path, std::string("is not valid JSON: ") + e.what());
  }
  return out;
}

}  // namespace ds4::text
