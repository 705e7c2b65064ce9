#!/usr/bin/env python3
"""Renders the chat template cases with Python Jinja2 set up as transformers sets it up, and writes the
references the C++ tests compare against byte for byte: tests/fixtures/templates/cases.jsonl.

Usage: python3 tools/oracle/render_reference.py [--tokenizers DIR]
DIR (default: $DS4_TOKENIZER_CACHE or ~/.cache/ds4/tokenizers, as tools/fetch-tokenizers.sh makes it) holds
qwen3/ and deepseek_v3/ with their tokenizer_config.json. The model templates are not copied into the
fixture; their SHA-256 is, so a changed template is detected instead of silently compared.

Each line is one case:
  {"name", "kind": "feature", "template", "context", "expected"}            rendered output
  {"name", "kind": "feature", "template", "context", "error", "python_error"} Jinja2 refused it; "error" is a
                                                                             substring of its message
  {"name", "kind": "model", "model", "template_sha256", "request", "expected" | "error", ...}
  {"name", "kind": "model_dir", "files", "request", "expected" | "error", ...} a small model directory
Model cases render the way apply_chat_template(messages, tokenize=False, **request) does (see
template_env.apply_chat_template): the context is the tokenizer's special tokens, tools=None,
documents=None, add_generation_prompt=False, then the request's keys; "chat_template" and
"continue_final_message" are apply_chat_template's own arguments.
"""

import argparse
import hashlib
import json
import os
import sys

import jinja2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from template_cases import DIR_CASES, ERROR_CASES, FEATURE_CASES, MODEL_CASES, MODEL_ERRORS  # noqa: E402
from template_env import apply_chat_template, make_environment, model_dir_templates, special_tokens_map  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "templates", "cases.jsonl")


def render(env, template, context):
    return env.from_string(template).render(**context)


def render_error(env, template, context):
    try:
        out = render(env, template, context)
    except Exception as e:  # noqa: BLE001 - any Jinja2/Python error is the reference
        return None, f"{type(e).__name__}: {e}"
    return out, None


def apply_error(env, templates, special, request):
    try:
        return apply_chat_template(env, templates, special, request), None
    except Exception as e:  # noqa: BLE001
        return None, f"{type(e).__name__}: {e}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_dir = os.environ.get("DS4_TOKENIZER_CACHE") or os.path.expanduser("~/.cache/ds4/tokenizers")
    parser.add_argument("--tokenizers", default=default_dir)
    args = parser.parse_args()

    assert jinja2.__version__.startswith("3."), f"Jinja2 3.x expected, found {jinja2.__version__}"
    env = make_environment()
    lines = []
    names = set()

    def add(case):
        assert case["name"] not in names, f"duplicate case name {case['name']}"
        names.add(case["name"])
        lines.append(json.dumps(case, ensure_ascii=False))

    for name, template, context in FEATURE_CASES:
        out, err = render_error(env, template, context)
        if err is not None:
            sys.exit(f"feature case {name} failed in Jinja2: {err}")
        add({"name": name, "kind": "feature", "template": template, "context": context, "expected": out})

    for name, template, context, substring in ERROR_CASES:
        out, err = render_error(env, template, context)
        if err is None:
            sys.exit(f"error case {name} rendered instead of failing: {out!r}")
        if substring not in err:
            sys.exit(f"error case {name}: {substring!r} is not in Jinja2's message {err!r}")
        add({"name": name, "kind": "feature", "template": template, "context": context, "error": substring,
             "python_error": err})

    for model in ("qwen3", "deepseek_v3"):
        with open(os.path.join(args.tokenizers, model, "tokenizer_config.json"), encoding="utf-8") as f:
            config = json.load(f)
        template = config["chat_template"]
        sha = hashlib.sha256(template.encode("utf-8")).hexdigest()
        special = special_tokens_map(config)
        for name, models, request in MODEL_CASES:
            if model not in models:
                continue
            case = {"name": f"{model}/{name}", "kind": "model", "model": model, "template_sha256": sha,
                    "request": request}
            out, err = apply_error(env, template, special, request)
            if name in MODEL_ERRORS:
                if err is None or MODEL_ERRORS[name] not in err:
                    sys.exit(f"model case {model}/{name}: expected an error with {MODEL_ERRORS[name]!r}, got {err or out!r}")
                case.update({"error": MODEL_ERRORS[name], "python_error": err})
            else:
                if err is not None:
                    sys.exit(f"model case {model}/{name} failed in Jinja2: {err}")
                case["expected"] = out
            add(case)

    for name, files, request in DIR_CASES:
        special = special_tokens_map(files["tokenizer_config.json"])
        out, err = apply_error(env, model_dir_templates(files), special, request)
        case = {"name": f"dir/{name}", "kind": "model_dir", "files": files, "request": request}
        if name in MODEL_ERRORS:
            if err is None or MODEL_ERRORS[name] not in err:
                sys.exit(f"model dir case {name}: expected an error with {MODEL_ERRORS[name]!r}, got {err or out!r}")
            case.update({"error": MODEL_ERRORS[name], "python_error": err})
        else:
            if err is not None:
                sys.exit(f"model dir case {name} failed: {err}")
            case["expected"] = out
        add(case)

    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} cases to {os.path.relpath(OUT, ROOT)} (Jinja2 {jinja2.__version__})")


if __name__ == "__main__":
    main()
