// `ds4 tokenize`: encode text with a tokenizer.json, for scripts and outside checks.
//   ds4 tokenize --tokenizer FILE.json --jsonl     one JSON string per stdin line -> one JSON array of ids per line
//   ds4 tokenize --model DIR --text "..."          prints {"ids": [...]} (DIR/tokenizer.json)
// --add-special-tokens applies the file's post-processor (a BOS, say). Errors go to stderr with a non-zero exit.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.h"
#include "core/error.h"
#include "text/tokenizer.h"

namespace {

// Spelled like Python's json.dumps of a list of ints, so outputs compare equal as text too.
std::string ids_json(const std::vector<int32_t>& ids) {
  std::string out = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(ids[i]);
  }
  return out + "]";
}

struct Options {
  std::string tokenizer, model, text;
  bool jsonl = false, add_special_tokens = false;
};

void run(const Options& o) {
  std::string path = o.tokenizer.empty() ? o.model + "/tokenizer.json" : o.tokenizer;
  auto tok = ds4::text::Tokenizer::from_file(path);
  if (!o.jsonl) {
    std::printf("{\"ids\": %s}\n", ids_json(tok.encode(o.text, o.add_special_tokens)).c_str());
    return;
  }
  std::string line;
  for (size_t n = 1; std::getline(std::cin, line); ++n) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      throw ds4::Error(ds4::ErrorKind::InvalidArgument, "stdin line " + std::to_string(n) + " is not JSON: " + e.what());
    }
    if (!j.is_string())
      throw ds4::Error(ds4::ErrorKind::InvalidArgument, "stdin line " + std::to_string(n) + " is not a JSON string");
    std::printf("%s\n", ids_json(tok.encode(j.get_ref<const std::string&>(), o.add_special_tokens)).c_str());
  }
  std::fflush(stdout);
}

ds4::cli::RegisterCommand reg([](CLI::App& app) {
  auto opts = std::make_shared<Options>();
  auto* sub = app.add_subcommand("tokenize", "Encode text to token ids with a tokenizer.json");
  auto* file = sub->add_option("--tokenizer", opts->tokenizer, "path of a tokenizer.json");
  auto* dir = sub->add_option("--model", opts->model, "model directory holding tokenizer.json");
  file->excludes(dir);
  auto* text = sub->add_option("--text", opts->text, "the text to encode; prints {\"ids\": [...]}");
  auto* jsonl = sub->add_flag("--jsonl", opts->jsonl, "read one JSON string per stdin line, print one id array per line");
  text->excludes(jsonl);
  sub->add_flag("--add-special-tokens", opts->add_special_tokens, "apply the file's post-processor (e.g. a BOS)");
  sub->callback([opts, file, dir, text, jsonl] {
    if (file->count() + dir->count() != 1)
      throw ds4::Error(ds4::ErrorKind::InvalidArgument, "tokenize: give --tokenizer FILE.json or --model DIR");
    if (text->count() + jsonl->count() != 1)
      throw ds4::Error(ds4::ErrorKind::InvalidArgument, "tokenize: give --text TEXT or --jsonl");
    run(*opts);
  });
});

}  // namespace
