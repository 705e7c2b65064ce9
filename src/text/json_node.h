// A view of one value inside tokenizer.json that remembers the file and its JSON path, so every complaint
// about the file names both ("tokenizer.json 'DIR/tokenizer.json': model.merges[12]: ...").
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace ds4::text {

class JsonNode {
 public:
  JsonNode(const nlohmann::json& value, const std::string& file, std::string path)
      : value_(&value), file_(&file), path_(std::move(path)) {}

  const nlohmann::json& json() const { return *value_; }
  const std::string& file() const { return *file_; }
  const std::string& path() const { return path_; }

  // Throws ds4::Error(Tokenizer) naming the file and this node's path.
  [[noreturn]] void fail(const std::string& what) const;

  // A member that must be present (and not null).
  JsonNode at(const char* key) const;
  // A member that may be absent or null.
  std::optional<JsonNode> find(const char* key) const;
  JsonNode element(size_t i) const;

  std::string str() const;
  bool boolean() const;
  int64_t integer() const;
  const nlohmann::json::array_t& array() const;
  const nlohmann::json::object_t& object() const;

  // Typed members with a default for when they are absent or null.
  std::string str_or(const char* key, const std::string& dflt) const;
  bool bool_or(const char* key, bool dflt) const;
  int64_t int_or(const char* key, int64_t dflt) const;

 private:
  const nlohmann::json* value_;
  const std::string* file_;
  std::string path_;
};

}  // namespace ds4::text
