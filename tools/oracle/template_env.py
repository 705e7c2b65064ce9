"""The Jinja2 environment transformers renders chat templates with, rebuilt from its documented setup
(transformers.utils.chat_template_utils._compile_jinja_template) so references can be made without
transformers installed:

- ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True) with the loopcontrols extension and
  the {% generation %} tag (which only marks assistant spans and renders its body unchanged),
- a `tojson` filter that is json.dumps(x, ensure_ascii=False, indent, separators, sort_keys),
- globals raise_exception(message) (raises TemplateError) and strftime_now(format),
- the render context of apply_chat_template: the tokenizer's special_tokens_map, then messages,
  tools=None, documents=None, add_generation_prompt=False, then the caller's keyword arguments,
- apply_chat_template's refusal of an empty conversation (ValueError) before anything is rendered.

tools/oracle/verify_with_transformers.py checks these renders against transformers itself.
"""

import copy
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


OWN_ARGUMENTS = ("chat_template", "continue_final_message", "tokenize", "padding", "truncation", "max_length",
                 "return_tensors", "return_dict", "return_assistant_tokens_mask", "tokenizer_kwargs")


def chat_context(special_tokens, request):
    """What apply_chat_template(messages, **kwargs) passes to the template: the special tokens, then
    tools=None, documents=None, add_generation_prompt=False, then the request's keys except
    apply_chat_template's own arguments."""
    context = dict(special_tokens)
    context.update({"tools": None, "documents": None, "add_generation_prompt": False})
    context.update({k: v for k, v in request.items() if k not in OWN_ARGUMENTS})
    return context


def model_dir_templates(files):
    """The chat template(s) transformers loads from a model directory given as {file name: content}: a string,
    or a dict of named templates. chat_template.jinja wins over tokenizer_config.json's "chat_template" (a
    string or a list of {name, template}); additional_chat_templates/NAME.jinja add named templates."""
    named = {}
    if "chat_template.jinja" in files:
        single = files["chat_template.jinja"]
    else:
        template = files["tokenizer_config.json"].get("chat_template")
        single = template if isinstance(template, str) else None
        if isinstance(template, list):
            named.update({t["name"]: t["template"] for t in template})
    prefix = "additional_chat_templates/"
    extra = {p[len(prefix):-len(".jinja")]: c for p, c in sorted(files.items()) if p.startswith(prefix) and p.endswith(".jinja")}
    if not named and not extra:
        return single
    if single is not None:
        named["default"] = single
    named.update(extra)
    return named


def select_template(templates, request):
    """transformers' get_chat_template."""
    requested = request.get("chat_template")
    if isinstance(templates, dict):
        if requested is not None and requested in templates:
            return templates[requested]
        if requested is None:
            if request.get("tools") is not None and "tool_use" in templates:
                return templates["tool_use"]
            return templates["default"]
        return requested
    return requested if requested is not None else templates


CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "


def apply_chat_template(env, templates, special_tokens, request):
    """apply_chat_template(messages, tokenize=False, **kwargs) for one conversation, continue_final_message
    included: the last message's text gets a marker, and the rendered prompt is cut at it. An empty
    conversation is refused before any template is chosen or rendered."""
    if not request["messages"]:
        raise ValueError("Cannot apply chat template to an empty conversation. Provide at least one message.")
    template = select_template(templates, request)
    cfm = request.get("continue_final_message")
    if not cfm:
        return env.from_string(template).render(**chat_context(special_tokens, request))
    if request.get("add_generation_prompt"):
        raise ValueError("continue_final_message and add_generation_prompt are not compatible.")
    field = cfm if isinstance(cfm, str) else "content"
    messages = copy.deepcopy(request["messages"])
    final = messages[-1].get(field)
    if final is None:
        raise ValueError(f'continue_final_message is set but the final message has no "{field}" to continue!')
    if field not in template:
        raise ValueError(f'continue_final_message is set to "{field}" but this is not an accepted field in the chat_template')
    if isinstance(final, list):
        for block in reversed(final):
            if "text" in block:
                final_text = block["text"]
                block["text"] = block["text"] + CONTINUE_TAG
                break
        else:
            raise ValueError("continue_final_message is set but we could not find any text to continue in the final message!")
    else:
        final_text = final
        messages[-1][field] = final + CONTINUE_TAG
    rendered = env.from_string(template).render(**chat_context(special_tokens, dict(request, messages=messages)))
    if final_text.strip() not in rendered or CONTINUE_TAG.strip() not in rendered:
        raise ValueError("continue_final_message is set but the final message does not appear in the chat after applying the chat template!")
    at = rendered.rindex(CONTINUE_TAG.strip())
    if rendered[at:at + len(CONTINUE_TAG)] == CONTINUE_TAG:
        return rendered[:at]
    return rendered[:at].rstrip()
