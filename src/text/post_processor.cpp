#include "text/post_processor.h"

namespace ds4::text {
namespace {

// The "single" template of TemplateProcessing, resolved to ids: runs of special ids and the place of
// the sequence.
class Template : public PostProcessor {
 public:
  // Each item: the special ids to insert, or none with is_sequence set.
  struct Item {
    std::vector<int32_t> ids;
    bool is_sequence = false;
  };
  explicit Template(std::vector<Item> items) : items_(std::move(items)) {}
  void add_special_tokens(std::vector<int32_t>& ids) const override {
    std::vector<int32_t> out;
    out.reserve(ids.size() + 4);
    for (const auto& item : items_) {
      if (item.is_sequence) {
        out.insert(out.end(), ids.begin(), ids.end());
      } else {
        out.insert(out.end(), item.ids.begin(), item.ids.end());
      }
    }
    ids.swap(out);
  }

 private:
  std::vector<Item> items_;
};

class NoSpecialTokens : public PostProcessor {
 public:
  void add_special_tokens(std::vector<int32_t>&) const override {}
};

class Sequence : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  void add_special_tokens(std::vector<int32_t>& ids) const override {
    for (const auto& p : parts_) p->add_special_tokens(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

std::unique_ptr<PostProcessor> make_template(const JsonNode& node) {
  JsonNode single = node.at("single");
  std::optional<JsonNode> specials = node.find("special_tokens");
  std::vector<Template::Item> items;
  for (size_t i = 0; i < single.array().size(); ++i) {
    JsonNode piece = single.element(i);
    if (auto seq = piece.find("Sequence")) {
      std::string which = seq->at("id").str();
      if (which != "A") seq->at("id").fail("a single-sequence template can only use sequence A, not " + which);
      items.push_back({{}, true});
    } else if (auto special = piece.find("SpecialToken")) {
      std::string name = special->at("id").str();
      if (!specials || !specials->json().contains(name))
        special->at("id").fail("special token '" + name + "' is not listed in special_tokens");
      JsonNode ids = specials->at(name.c_str()).at("ids");
      Template::Item item;
      for (size_t k = 0; k < ids.array().size(); ++k) item.ids.push_back(static_cast<int32_t>(ids.element(k).integer()));
      items.push_back(std::move(item));
    } else {
      piece.fail("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  return std::make_unique<Template>(std::move(items));
}

// BertProcessing / RobertaProcessing: "cls": ["<s>", 0], "sep": ["</s>", 2].
std::unique_ptr<PostProcessor> make_cls_sep(const JsonNode& node) {
  auto id_of = [&](const char* key) {
    JsonNode pair = node.at(key);
    if (pair.array().size() != 2) pair.fail("expected [token, id]");
    return static_cast<int32_t>(pair.element(1).integer());
  };
  std::vector<Template::Item> items = {{{id_of("cls")}, false}, {{}, true}, {{id_of("sep")}, false}};
  return std::make_unique<Template>(std::move(items));
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const JsonNode& node) {
  std::string type = node.at("type").str();
  if (type == "TemplateProcessing") return make_template(node);
  if (type == "BertProcessing" || type == "RobertaProcessing") return make_cls_sep(node);
  if (type == "ByteLevel") return std::make_unique<NoSpecialTokens>();
  if (type == "Sequence") {
    JsonNode list = node.at("processors");
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (size_t i = 0; i < list.array().size(); ++i) parts.push_back(make_post_processor(list.element(i)));
    return std::make_unique<Sequence>(std::move(parts));
  }
  node.at("type").fail("unsupported post_processor type '" + type +
                       "' (supported: TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence)");
}

}  // namespace ds4::text
