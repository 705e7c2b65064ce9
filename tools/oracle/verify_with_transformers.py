#!/usr/bin/env python3
"""Checks the chat template references against transformers itself (run where transformers is installed,
e.g. the GPU machine): every model case of tests/fixtures/templates/cases.jsonl is rendered with
AutoTokenizer.apply_chat_template, every feature case with transformers' own compiled Jinja environment,
and the special tokens with tokenizer.special_tokens_map. Any difference from the fixture (which
render_reference.py makes with a plain-Jinja2 mirror of transformers' setup) is reported.

A case whose fixture records an error agrees when transformers fails too, whatever its message: the
message of the same failure can change with the Python version (slicing a dict is "TypeError: unhashable
type: 'slice'" before Python 3.12 and "KeyError: slice(1, None, None)" from 3.12 on). A different message
is printed as a note, not counted as a difference. Cases with an expected render must match byte for byte.

Usage: python3 tools/oracle/verify_with_transformers.py --tokenizers DIR
DIR holds qwen3/ and deepseek_v3/ with tokenizer.json and tokenizer_config.json. Exit status 1 on any
difference.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

import transformers
from transformers import AutoTokenizer
from transformers.utils import chat_template_utils

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from template_env import special_tokens_map  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CASES = os.path.join(ROOT, "tests", "fixtures", "templates", "cases.jsonl")


def compile_template(source):
    # transformers 4.4x-5.x name; older releases call it differently.
    for name in ("_compile_jinja_template", "_cached_compile_jinja_template"):
        fn = getattr(chat_template_utils, name, None)
        if fn is not None:
            return fn(source)
    raise SystemExit("transformers has no _compile_jinja_template")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizers", required=True)
    args = parser.parse_args()
    print(f"transformers {transformers.__version__}")
    cases = [json.loads(line) for line in open(CASES, encoding="utf-8") if line.strip()]
    failures = notes = 0
    tokenizers = {}

    for model in ("qwen3", "deepseek_v3"):
        path = os.path.join(args.tokenizers, model)
        tok = AutoTokenizer.from_pretrained(path)
        tokenizers[model] = tok
        with open(os.path.join(path, "tokenizer_config.json"), encoding="utf-8") as f:
            mirror = special_tokens_map(json.load(f))
        actual = dict(tok.special_tokens_map)
        if actual != mirror:
            failures += 1
            print(f"DIFF special tokens {model}: transformers {actual} mirror {mirror}")
        else:
            print(f"ok special tokens {model}: {actual}")

    for case in cases:
        name = case["name"]
        try:
            if case["kind"] == "model_dir":
                # A real tokenizer.json next to the case's files, so AutoTokenizer can load the directory.
                d = tempfile.mkdtemp()
                shutil.copy(os.path.join(args.tokenizers, "qwen3", "tokenizer.json"), d)
                for fname, content in case["files"].items():
                    os.makedirs(os.path.dirname(os.path.join(d, fname)), exist_ok=True)
                    with open(os.path.join(d, fname), "w", encoding="utf-8") as f:
                        f.write(content if isinstance(content, str) else json.dumps(content))
                request = dict(case["request"])
                messages = request.pop("messages")
                out = AutoTokenizer.from_pretrained(d).apply_chat_template(messages, tokenize=False, **request)
            elif case["kind"] == "model":
                request = dict(case["request"])
                messages = request.pop("messages")
                out = tokenizers[case["model"]].apply_chat_template(messages, tokenize=False, **request)
            else:
                out = compile_template(case["template"]).render(**case["context"])
            err = None
        except Exception as e:  # noqa: BLE001
            out, err = None, f"{type(e).__name__}: {e}"
        if "expected" in case:
            ok = err is None and out == case["expected"]
        else:
            ok = err is not None
            if ok and case["error"] not in err:
                notes += 1
                print(f"note {name}: both fail, with different messages:\n  fixture: {case.get('python_error', case['error'])!r}\n  transformers: {err!r}")
        if not ok:
            failures += 1
            print(f"DIFF {name}:\n  fixture: {case.get('expected', case.get('error'))!r}\n  transformers: {out if err is None else err!r}")
    print(f"{len(cases)} cases, {failures} differences ({notes} errors with a different message)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
