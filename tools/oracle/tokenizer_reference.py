#!/usr/bin/env python3
"""Reference outputs of HF `tokenizers` for the ds4 tokenizer tests (stdlib + tokenizers only; no network).

  python3 tools/oracle/tokenizer_reference.py --tokenizers DIR \\
      --strings tests/fixtures/tokenizer/strings.jsonl --out OUTDIR
  python3 tools/oracle/tokenizer_reference.py --lowercase-only --out OUTDIR   (lowercase.json alone)

DIR holds qwen3/tokenizer.json and deepseek_v3/tokenizer.json (the layout tools/fetch-tokenizers.sh
makes). The synthetic tokenizers and decode inputs are read from the directory of --strings
(synthetic/*.json, decode_ids.jsonl). Writes into OUTDIR:

  qwen3_ids.jsonl, deepseek_v3_ids.jsonl   encode(s, add_special_tokens=False).ids, one array per string
  qwen3_marks_ids.jsonl                    the Qwen3 file with the Qwen3.5 split regex (\\p{M} kept with
                                           letters), same strings
  synth_*_ids.jsonl, synth_*_ids_special.jsonl   each synthetic tokenizer, add_special_tokens False / True
  qwen3_pretok.jsonl, deepseek_v3_pretok.jsonl   pre-tokenizer pieces of the normalized strings (to
                                           diagnose a mismatch; added tokens are not cut here)
  decode.jsonl                             for each line of decode_ids.jsonl: {"text": decode(ids),
                                           "text_skip": decode(ids, skip_special_tokens=True)}
  onig_classes.json                        which code points the regex engine puts in \\p{L}, \\p{N},
                                           \\p{M}, \\p{P}, \\p{S}, \\p{Nd}, \\s, \\w (as [first, last] ranges),
                                           and which X make "'X" match (?i:'s|'t|'m|'d)
  lowercase.json                           the Lowercase normalizer on each code point alone: every code
                                           point c (surrogates skipped) whose normalize_str(chr(c)) is not
                                           chr(c), with the code points it becomes
  tokenizer_speed.json                     single-thread encode throughput (MB/s of UTF-8 input) looping
                                           over the strings one encode() at a time, on one long text, and
                                           separately encode_batch() with the default thread pool
"""
import argparse
import json
import os
import platform
import sys
import tempfile
import time

import tokenizers
from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers

REAL = ["qwen3", "deepseek_v3"]
QWEN35_PATTERN = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+"
                  "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_jsonl(path, rows):
    with open(path, "w", encoding="ascii", newline="\n") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=True) + "\n")


def encode_all(tok, strings, add_special):
    return [tok.encode(s, add_special_tokens=add_special).ids for s in strings]


def qwen3_marks_tokenizer(qwen3_path):
    """The Qwen3 tokenizer.json with its Split regex replaced by the Qwen3.5 one."""
    with open(qwen3_path, encoding="utf-8") as f:
        doc = json.load(f)
    splits = [p for p in doc["pre_tokenizer"]["pretokenizers"] if p["type"] == "Split"]
    assert len(splits) == 1, "unexpected Qwen3 pre_tokenizer layout"
    splits[0]["pattern"] = {"Regex": QWEN35_PATTERN}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)
        path = f.name
    try:
        return Tokenizer.from_file(path)
    finally:
        os.unlink(path)


def pretok_all(tok, strings):
    rows = []
    for s in strings:
        text = tok.normalizer.normalize_str(s) if tok.normalizer is not None else s
        rows.append([piece for piece, _ in tok.pre_tokenizer.pre_tokenize_str(text)])
    return rows


def ranges(cps):
    out = []
    for c in cps:
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def onig_classes():
    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    text = "".join(map(chr, cps))
    result = {}
    for name, pattern in [("L", r"\p{L}"), ("N", r"\p{N}"), ("M", r"\p{M}"), ("P", r"\p{P}"), ("S", r"\p{S}"),
                          ("Nd", r"\p{Nd}"), ("s", r"\s"), ("w", r"\w")]:
        removed = pre_tokenizers.Split(Regex(pattern), behavior="removed")
        kept = set()
        for piece, _ in removed.pre_tokenize_str(text):
            kept.update(map(ord, piece))
        result[name] = ranges([c for c in cps if c not in kept])
    pairs = "".join("'" + chr(c) for c in cps)
    removed = pre_tokenizers.Split(Regex(r"(?i:'s|'t|'m|'d)"), behavior="removed")
    kept = set()
    for piece, _ in removed.pre_tokenize_str(pairs):
        kept.update(ord(ch) for ch in piece if ch != "'")
    result["fold_stmd"] = [c for c in cps if c != ord("'") and c not in kept]
    return result


def lowercase():
    """normalizers.Lowercase() on every code point alone (Rust's char::to_lowercase, with the Unicode
    version of the Rust toolchain tokenizers was built with): the ones it changes, and into what."""
    lower = normalizers.Lowercase()
    mappings = []
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        out = lower.normalize_str(chr(c))
        if out != chr(c):
            mappings.append([c, [ord(ch) for ch in out]])
    return {"source": "tokenizers %s normalizers.Lowercase().normalize_str(chr(c)), "
                      "written by tools/oracle/tokenizer_reference.py" % tokenizers.__version__,
            "tokenizers_version": tokenizers.__version__, "complete": True, "mappings": mappings}


def write_lowercase(out_dir):
    doc = lowercase()
    with open(os.path.join(out_dir, "lowercase.json"), "w", encoding="ascii") as f:
        json.dump(doc, f)
        f.write("\n")
    print("lowercase.json: %d code points change" % len(doc["mappings"]), file=sys.stderr)


def throughput(fn, nbytes, min_seconds=2.0):
    fn()  # warm up (fills the BPE cache, as a server would be)
    rounds, start = 0, time.perf_counter()
    while True:
        fn()
        rounds += 1
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds and rounds >= 3:
            return nbytes * rounds / elapsed / 1e6


def speed(toks, strings):
    total = sum(len(s.encode("utf-8")) for s in strings)
    long_text = "\n".join(strings)
    out = {"tokenizers_version": tokenizers.__version__, "python": platform.python_version(),
           "machine": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
           "strings_bytes": total, "long_text_bytes": len(long_text.encode("utf-8")),
           "mb_per_s": {}}
    for name, tok in toks.items():
        def loop():
            for s in strings:
                tok.encode(s, add_special_tokens=False)
        out["mb_per_s"][name] = {
            "strings_single_thread": round(throughput(loop, total), 3),
            "long_text_single_thread": round(throughput(lambda: tok.encode(long_text, add_special_tokens=False),
                                                        len(long_text.encode("utf-8"))), 3),
            "strings_encode_batch": round(throughput(lambda: tok.encode_batch(strings, add_special_tokens=False),
                                                     total), 3),
        }
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizers", help="directory with qwen3/ and deepseek_v3/ subdirectories")
    ap.add_argument("--strings", help="tests/fixtures/tokenizer/strings.jsonl")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--skip-speed", action="store_true", help="do not measure throughput")
    ap.add_argument("--lowercase-only", action="store_true",
                    help="write lowercase.json only (needs neither --tokenizers nor --strings)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.lowercase_only:
        write_lowercase(args.out)
        return
    if not args.tokenizers or not args.strings:
        ap.error("--tokenizers and --strings are required (unless --lowercase-only)")
    fixtures = os.path.dirname(os.path.abspath(args.strings))
    strings = read_jsonl(args.strings)
    print("tokenizers %s, %d strings" % (tokenizers.__version__, len(strings)), file=sys.stderr)

    toks = {}
    for name in REAL:
        path = os.path.join(args.tokenizers, name, "tokenizer.json")
        toks[name] = Tokenizer.from_file(path)
        write_jsonl(os.path.join(args.out, name + "_ids.jsonl"), encode_all(toks[name], strings, False))
        write_jsonl(os.path.join(args.out, name + "_pretok.jsonl"), pretok_all(toks[name], strings))
    marks = qwen3_marks_tokenizer(os.path.join(args.tokenizers, "qwen3", "tokenizer.json"))
    write_jsonl(os.path.join(args.out, "qwen3_marks_ids.jsonl"), encode_all(marks, strings, False))

    all_toks = dict(toks)
    synth_dir = os.path.join(fixtures, "synthetic")
    for fname in sorted(os.listdir(synth_dir)):
        if not fname.endswith(".json"):
            continue
        name = fname[:-5]
        tok = Tokenizer.from_file(os.path.join(synth_dir, fname))
        all_toks[name] = tok
        write_jsonl(os.path.join(args.out, name + "_ids.jsonl"), encode_all(tok, strings, False))
        write_jsonl(os.path.join(args.out, name + "_ids_special.jsonl"), encode_all(tok, strings, True))

    rows = []
    for item in read_jsonl(os.path.join(fixtures, "decode_ids.jsonl")):
        tok = all_toks[item["tokenizer"]]
        rows.append({"text": tok.decode(item["ids"], skip_special_tokens=False),
                     "text_skip": tok.decode(item["ids"], skip_special_tokens=True)})
    write_jsonl(os.path.join(args.out, "decode.jsonl"), rows)

    with open(os.path.join(args.out, "onig_classes.json"), "w", encoding="ascii") as f:
        json.dump(onig_classes(), f)
    write_lowercase(args.out)

    if not args.skip_speed:
        with open(os.path.join(args.out, "tokenizer_speed.json"), "w", encoding="ascii") as f:
            json.dump(speed(toks, strings), f, indent=1)
            f.write("\n")
    print("wrote %s" % args.out, file=sys.stderr)


if __name__ == "__main__":
    main()
