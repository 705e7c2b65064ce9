#!/usr/bin/env python3
"""Makes the tiny chat model directory the server tests use: a byte-level BPE tokenizer (tokenizer.json,
256 byte tokens, a few merges, the Qwen special tokens below id 300) and a Qwen-style chat template
(tokenizer_config.json), next to the weights of a committed fixture (symlinked) whose config is patched so
that <|im_end|> and <|endoftext|> end generation.

    python3 tools/make_test_model.py OUT_DIR [--weights tests/fixtures/qwen4/vl_bf16]
    python3 tools/make_test_model.py OUT_DIR --tokenizer-only

Standard library only; the output is the same on every run.
"""
import argparse
import json
import os
import shutil
import sys


def bytes_to_unicode():
    """GPT-2's reversible byte <-> printable character map, the one ByteLevel pre-tokenizers use."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


# Merges over the byte alphabet ("Ġ" is the space byte); each result is a new token, in rank order.
MERGES = [("Ġ", "t"), ("h", "e"), ("i", "n"), ("Ġ", "a"), ("e", "r"), ("o", "n"), ("Ġt", "he"), ("r", "e"),
          ("Ġ", "s"), ("a", "t"), ("e", "n"), ("o", "r"), ("Ġ", "w"), ("l", "l"), ("Ġ", "c"), ("i", "s"),
          ("e", "s"), ("Ġ", "i"), ("Ġ", "o"), ("a", "n"), ("Ġ", "f"), ("Ġ", "b"), ("a", "r"), ("Ġ", "p")]

# Qwen's added tokens: the first three are special (skipped by skip_special_tokens), the tags are not.
SPECIALS = [("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True), ("<think>", False),
            ("</think>", False), ("<tool_call>", False), ("</tool_call>", False), ("<tool_response>", False),
            ("</tool_response>", False)]
FIRST_SPECIAL_ID = 280

# Qwen2/3's pre-tokenizer split.
SPLIT_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")

# Qwen3's chat template, shortened: tools in the system turn, <tool_call> JSON for the assistant's calls,
# tool results as <tool_response> in a user turn. enable_thinking: true opens a think block in the
# generation prompt, false adds an empty one, absent leaves it to the model.
CHAT_TEMPLATE = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == "user" or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set content = message.content if message.content is string else '' %}
        {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is true %}
        {{- '<think>\n' }}
    {%- elif enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}
"""


def tokenizer_json():
    b2u = bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    merges = []
    for a, b in MERGES:
        assert a in vocab and b in vocab, (a, b)
        vocab[a + b] = len(vocab)
        merges.append([a, b])
    assert len(vocab) <= FIRST_SPECIAL_ID
    added = [{"id": FIRST_SPECIAL_ID + i, "content": tok, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": special} for i, (tok, special) in enumerate(SPECIALS)]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": SPLIT_REGEX}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def tokenizer_config():
    decoder = {str(FIRST_SPECIAL_ID + i): {"content": tok, "lstrip": False, "normalized": False, "rstrip": False,
                                           "single_word": False, "special": special}
               for i, (tok, special) in enumerate(SPECIALS)}
    return {"add_bos_token": False, "add_prefix_space": False, "added_tokens_decoder": decoder, "bos_token": None,
            "chat_template": CHAT_TEMPLATE, "clean_up_tokenization_spaces": False, "eos_token": "<|im_end|>",
            "errors": "replace", "model_max_length": 32768, "pad_token": "<|endoftext|>", "split_special_tokens": False,
            "tokenizer_class": "Qwen2Tokenizer", "unk_token": None}


def special_id(token):
    return FIRST_SPECIAL_ID + [t for t, _ in SPECIALS].index(token)


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--weights", default=os.path.join(here, "..", "tests", "fixtures", "qwen4", "vl_bf16"))
    ap.add_argument("--tokenizer-only", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    write_json(os.path.join(a.out, "tokenizer.json"), tokenizer_json())
    write_json(os.path.join(a.out, "tokenizer_config.json"), tokenizer_config())
    if a.tokenizer_only:
        return 0
    eos = [special_id("<|im_end|>"), special_id("<|endoftext|>")]
    with open(os.path.join(a.weights, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    for c in (config, config.get("text_config", {})):
        if "eos_token_id" in c:
            c["eos_token_id"] = eos
    vocab = config.get("text_config", config).get("vocab_size", 0)
    if vocab < FIRST_SPECIAL_ID + len(SPECIALS):
        sys.exit(f"{a.weights}: vocab_size {vocab} is too small for the test tokenizer")
    write_json(os.path.join(a.out, "config.json"), config)
    write_json(os.path.join(a.out, "generation_config.json"), {"eos_token_id": eos})
    for name in sorted(os.listdir(a.weights)):
        if name.endswith(".safetensors") or name == "model.safetensors.index.json":
            dst = os.path.join(a.out, name)
            if os.path.lexists(dst):
                os.remove(dst)
            os.symlink(os.path.abspath(os.path.join(a.weights, name)), dst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
