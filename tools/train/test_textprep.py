#!/usr/bin/env python3
"""Checks of the torch-free parts of the training pipeline (run on the development machine).

    python3 tools/train/test_textprep.py [CORPUS_DIR]

- chat_template.jinja (rendered with Jinja2 the way transformers does: trim_blocks, lstrip_blocks)
  equals textprep.render_chat on the corpus conversations and on hand-made ones;
- the template's tool and thinking branches render what Qwen's format expects;
- the corpus loads, its manifest checks out and the validation split is about 1 %.
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import textprep  # noqa: E402

failures = 0
passed = 0


def check(cond, what):
    global failures, passed
    if cond:
        passed += 1
    else:
        failures += 1
        print("FAIL:", what)


def jinja_render(messages, **kw):
    import jinja2
    import jinja2.sandbox

    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                                        extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = lambda x, indent=None, ensure_ascii=False: json.dumps(x, ensure_ascii=ensure_ascii, indent=indent)
    env.globals["raise_exception"] = raise_exception
    return env.from_string(textprep.chat_template()).render(messages=messages, **kw)


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", ".gpu", "corpus")
    hand = [
        [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"}],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "a"},
         {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"},
         {"role": "assistant", "content": "d\n\ne"}],
        [{"role": "user", "content": "x\ny"}],
    ]
    for m in hand:
        check(jinja_render(m) == textprep.render_chat(m), f"render {m}")
        check(jinja_render(m, add_generation_prompt=True) == textprep.render_chat(m, add_generation_prompt=True),
              f"render+gen {m}")
    check(jinja_render(hand[0][:1], add_generation_prompt=True) ==
          "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", "generation prompt")
    check(jinja_render(hand[0][:1], add_generation_prompt=True, enable_thinking=False) ==
          "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
          "enable_thinking=false")
    check(textprep.render_chat(hand[0], empty_think=True) ==
          "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHi!<|im_end|>\n",
          "empty think")
    # a reasoning block in history is dropped, as in Qwen3's template
    m = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "<think>\nhm\n</think>\n\nA"}]
    check(jinja_render(m) == "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n", "think strip")
    check(textprep.render_chat(m) == jinja_render(m), "think strip twin")
    # tools
    tools = [{"type": "function", "function": {"name": "get_time", "description": "Time now",
                                               "parameters": {"type": "object", "properties": {}}}}]
    m = [{"role": "user", "content": "time?"},
         {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
             "name": "get_time", "arguments": {"tz": "UTC"}}}]},
         {"role": "tool", "content": "12:00"}, {"role": "tool", "content": "ok"}]
    out = jinja_render(m, tools=tools, add_generation_prompt=True)
    want = ('<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n'
            'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n'
            + json.dumps(tools[0]) +
            '\n</tools>\n\nFor each function call, return a json object with function name and arguments within '
            '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": '
            '<args-json-object>}\n</tool_call><|im_end|>\n'
            '<|im_start|>user\ntime?<|im_end|>\n'
            '<|im_start|>assistant\n<tool_call>\n{"name": "get_time", "arguments": {"tz": "UTC"}}\n</tool_call><|im_end|>\n'
            '<|im_start|>user\n<tool_response>\n12:00\n</tool_response>\n<tool_response>\nok\n</tool_response><|im_end|>\n'
            '<|im_start|>assistant\n')
    check(out == want, "tools:\n" + out)

    if os.path.exists(os.path.join(corpus, "manifest.json")):
        manifest, records = textprep.load_corpus(corpus)
        chats = [r for r in records if "messages" in r]
        rng = random.Random(0)
        sample = rng.sample(chats, min(3000, len(chats)))
        bad = [r for r in sample if jinja_render(r["messages"]) != textprep.render_chat(r["messages"])]
        check(not bad, f"{len(bad)} corpus conversations render differently, e.g. {bad[:1]}")
        nval = sum(r["_val"] for r in records)
        check(0.005 < nval / len(records) < 0.02, f"validation share {nval}/{len(records)}")
        srcs = {r["src"] for r in records}
        check(srcs <= set(manifest["record_sources"]), "record sources listed in the manifest")
        check(set(manifest["record_sources"].values()) <= set(manifest["sources"]), "sources have licences")
        train, val, tsrc = textprep.render_all(records, upsample={"austen": 2})
        check(len(train) == sum((2 if r["src"] == "austen" else 1) for r in records if not r["_val"]),
              "upsampled train count")
        check(all(t for t in train) and all(t for t in val), "no empty documents")
        toks = [t for t, _ in textprep.ADDED_TOKENS]
        leaked = [t for t in train if any(x in t for x in toks[3:])]
        check(len(leaked) < 0.2 * len(train), "think/tool tokens only in the empty-think share")
        plain = [t for t, r in zip(train, tsrc) if not r.endswith("_qa") and r != "handwritten"]
        check(not any(any(x in t for x in toks) for t in plain), "prose never contains added tokens")
        print(f"corpus: {len(records)} records ({nval} validation), {sum(map(len, train)) / 1e6:.1f} M chars train")
    else:
        print(f"corpus not found at {corpus}: corpus checks skipped")
    print(f"{passed} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
