#include "text/json_node.h"

#include "core/error.h"

namespace ds4::text {

void JsonNode::fail(const std::string& what) const {
  std::string where = path_.empty() ? "" : path_ + ": ";
  throw Error(ErrorKind::Tokenizer, "tokenizer file '" + *file_ + "': " + where + what);
}

JsonNode JsonNode::at(const char* key) const {
  auto node = find(key);
  if (!node) fail(std::string("missing required field '") + key + "'");
  return *node;
}

std::optional<JsonNode> JsonNode::find(const char* key) const {
  if (!value_->is_object()) fail("expected an object");
  auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return JsonNode(*it, *file_, path_.empty() ? key : path_ + "." + key);
}

JsonNode JsonNode::element(size_t i) const {
  return JsonNode(array().at(i), *file_, path_ + "[" + std::to_string(i) + "]");
}

std::string JsonNode::str() const {
  if (!value_->is_string()) fail("expected a string, found " + std::string(value_->type_name()));
  return value_->get<std::string>();
}

bool JsonNode::boolean() const {
  if (!value_->is_boolean()) fail("expected true or false, found " + std::string(value_->type_name()));
  return value_->get<bool>();
}

int64_t JsonNode::integer() const {
  if (!value_->is_number_integer()) fail("expected an integer, found " + std::string(value_->type_name()));
  return value_->get<int64_t>();
}

const nlohmann::json::array_t& JsonNode::array() const {
  if (!value_->is_array()) fail("expected an array, found " + std::string(value_->type_name()));
  return value_->get_ref<const nlohmann::json::array_t&>();
}

const nlohmann::json::object_t& JsonNode::object() const {
  if (!value_->is_object()) fail("expected an object, found " + std::string(value_->type_name()));
  return value_->get_ref<const nlohmann::json::object_t&>();
}

std::string JsonNode::str_or(const char* key, const std::string& dflt) const {
  auto n = find(key);
  return n ? n->str() : dflt;
}

bool JsonNode::bool_or(const char* key, bool dflt) const {
  auto n = find(key);
  return n ? n->boolean() : dflt;
}

int64_t JsonNode::int_or(const char* key, int64_t dflt) const {
  auto n = find(key);
  return n ? n->integer() : dflt;
}

}  // namespace ds4::text
