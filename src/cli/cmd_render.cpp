// `ds4 render --model DIR --request FILE.json`: prints the prompt the model's chat template makes of a
// request, exactly and nothing else (no trailing newline), as transformers' apply_chat_template would.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/command.h"
#include "core/error.h"
#include "text/chat_template.h"

namespace {

nlohmann::ordered_json read_request(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw ds4::Error(ds4::ErrorKind::Io, "cannot open request file " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  nlohmann::ordered_json request;
  try {
    request = nlohmann::ordered_json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw ds4::Error(ds4::ErrorKind::Format, path + ": invalid JSON: " + e.what());
  }
  if (!request.is_object() || !request.contains("messages") || !request["messages"].is_array())
    throw ds4::Error(ds4::ErrorKind::InvalidArgument, path + ": expected a JSON object with a \"messages\" array");
  return request;
}

struct RenderOptions {
  std::string model_dir;
  std::string request_file;
};

ds4::cli::RegisterCommand reg([](CLI::App& app) {
  auto opts = std::make_shared<RenderOptions>();
  auto* sub = app.add_subcommand("render", "Render a chat request with the model's chat template");
  sub->add_option("--model", opts->model_dir, "Model directory (chat_template.jinja or tokenizer_config.json)")
      ->required();
  sub->add_option("--request", opts->request_file,
                  "JSON file: messages plus template variables (tools, add_generation_prompt, ...)")
      ->required();
  sub->callback([opts] {
    auto tmpl = ds4::text::ModelChatTemplate::load(opts->model_dir);
    std::string prompt = tmpl.render(read_request(opts->request_file));
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
  });
});

}  // namespace
