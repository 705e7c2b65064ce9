"""The Jinja2 environment transformers renders chat templates with, rebuilt from its documented setup
(transformers.utils.chat_template_utils._compile_jinja_template) so references can be made without
transformers installed:

- ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the loopcontrols extension and
  the {% generation %} tag (which only marks assistant spans and renders its body unchanged),
- a `tojson` filter that is json.dumps(x, ensure_ascii=False, indent, separators, sort_keys),
- globals raise_exception(message) (raises TemplateError) and strftime_now(format),
- the render context of apply_chat_template: the tokenizer's special_tokens_map, then messages,
  tools=None, documents=None, add_generation_prompt=False, then the caller's keyword arguments.

tools/oracle/verify_with_transformers.py checks these renders against transformers itself.
"""

import json
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment


class GenerationTag(Extension):
    """{% generation %}...{% endgeneration %}: transformers tracks assistant token spans with it; the text
    renders as if the tags were absent."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render_body"), [], [], body).set_lineno(lineno)

    def _render_body(self, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return datetime.now().strftime(format)


def make_environment():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


NAMED_SPECIAL_TOKENS = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]


def _token_text(value):
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def special_tokens_map(tokenizer_config):
    """transformers 5's PreTrainedTokenizerBase.special_tokens_map for a tokenizer_config.json: the named
    special tokens that are set, then other "*_token" entries holding a token (model-specific tokens)."""
    out = {}
    for name in NAMED_SPECIAL_TOKENS:
        text = _token_text(tokenizer_config.get(name))
        if text is not None:
            out[name] = text
    for key, value in tokenizer_config.items():
        if key.endswith("_token") and key not in NAMED_SPECIAL_TOKENS:
            text = _token_text(value)
            if text is not None:
                out[key] = text
    extra = tokenizer_config.get("extra_special_tokens")
    if isinstance(extra, dict):
        for key, value in extra.items():
            text = _token_text(value)
            if text is not None:
                out[key] = text
    return out


def chat_context(special_tokens, request):
    """What apply_chat_template(messages, **kwargs) passes to the template."""
    context = dict(special_tokens)
    context.update({"tools": None, "documents": None, "add_generation_prompt": False})
    context.update(request)
    return context


def model_dir_template(files, request):
    """The template transformers picks for a model directory given as {file name: content}:
    chat_template.jinja if present, else tokenizer_config.json's "chat_template", which may be a list of
    {name, template} where "tool_use" is taken when tools are given and "default" otherwise."""
    if "chat_template.jinja" in files:
        return files["chat_template.jinja"]
    template = files["tokenizer_config.json"]["chat_template"]
    if isinstance(template, str):
        return template
    named = {t["name"]: t["template"] for t in template}
    if request.get("tools") is not None and "tool_use" in named:
        return named["tool_use"]
    return named["default"]
