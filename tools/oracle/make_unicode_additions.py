#!/usr/bin/env python3
"""Generates src/text/unicode_additions.cpp from tests/fixtures/tokenizer/onig_classes.json and
tests/fixtures/tokenizer/lowercase.json.

HF `tokenizers` runs tokenizer.json regexes with Oniguruma, whose Unicode tables are newer (16.0 in
tokenizers 0.23.2) than PCRE2 10.42's (14.0). onig_classes.json (written by tokenizer_reference.py on the
reference machine) lists, for \\p{L}, \\p{N}, \\p{M}, \\p{P}, \\p{S}, \\p{Nd} and \\w, every code point
Oniguruma puts in the class. This script keeps what Unicode 14.0 lacks: the code points unassigned in
14.0 that Oniguruma puts in a class, as ranges tagged with that class (letter, mark, decimal number, other
number, punctuation, symbol), plus the members of Oniguruma's \\w beyond Letter, Mark, Decimal_Number and
Connector_Punctuation. It needs a Python whose unicodedata is Unicode 14.0 (Python 3.11), the version
PCRE2 10.42 is built on, and checks that no code point changed category between the two versions and
that each new code point has one of those six class signatures.

Lowercasing: HF's Lowercase normalizer is Rust's char::to_lowercase (Unicode 16.0 for tokenizers
0.23.2); ds4's is utf8proc 2.8 (Unicode 15.0). lowercase.json (also from tokenizer_reference.py) lists
every code point the reference changes and what into. The lowercase additions are the code points where
it and Python 3.11's str.lower() (Unicode 14.0) disagree: a new mapping, or none where Python has one
(then the entry maps the code point to itself). Each must be a code point unassigned in 14.0; anything
else means the two disagree on an older character, and the script stops. With lowercase.json absent the
table is empty; with a partial one ("complete": false, e.g. a provisional file) only its listed code
points are compared.

  python3 tools/oracle/make_unicode_additions.py
"""
import json
import os
import sys
import unicodedata

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "onig_classes.json")
LOWER = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "lowercase.json")
DST = os.path.join(ROOT, "src", "text", "unicode_additions.cpp")
CLASSES = ["L", "N", "M", "P", "S", "Nd"]


def members(ranges):
    out = set()
    for a, b in ranges:
        out.update(range(a, b + 1))
    return out


def in_category(cat, cls):
    return cat == cls if len(cls) == 2 else cat.startswith(cls)


def ranges(cps):
    out = []
    for c in sorted(cps):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def pcre_fragment(cps):
    parts = []
    for a, b in ranges(cps):
        parts.append("\\\\x{%X}" % a if a == b else "\\\\x{%X}-\\\\x{%X}" % (a, b))
    return "".join(parts)


def cxx_string(fragment, indent):
    # Split long literals into adjacent pieces of at most ~100 characters.
    pieces, line = [], ""
    for part in fragment.replace("\\\\x", "\n\\\\x").split("\n"):
        if len(line) + len(part) > 100:
            pieces.append(line)
            line = ""
        line += part
    if line:
        pieces.append(line)
    return ("\n" + " " * indent).join('"%s"' % p for p in pieces) if pieces else '""'


SIGNATURES = {  # classes a new code point is in -> NewCharClass
    ("L", "w"): "Letter", ("M", "w"): "Mark", ("N", "Nd", "w"): "DecimalNumber", ("N",): "OtherNumber",
    ("P",): "Punctuation", ("S",): "Symbol",
}


def u32_literal(cps):
    return 'U"%s"' % "".join("\\U%08X" % c for c in cps)


def lowercase_additions(cps, cat):
    """[(code point, [code points it lowercases to])] where lowercase.json and Python's str.lower() differ."""
    if not os.path.exists(LOWER):
        print("no %s: the lowercase additions are empty" % os.path.relpath(LOWER, ROOT), file=sys.stderr)
        return [], None
    with open(LOWER) as f:
        doc = json.load(f)
    ref = {}
    for c, to in doc["mappings"]:
        if c in ref or not 0 <= c <= 0x10FFFF or 0xD800 <= c <= 0xDFFF or not to:
            sys.exit("lowercase.json: bad or repeated entry for %r" % c)
        ref[c] = to
    complete = doc.get("complete") is True
    checked = cps if complete else sorted(ref)
    out = []
    for c in checked:
        want = ref.get(c, [c])
        if [ord(ch) for ch in chr(c).lower()] != want:
            out.append((c, want))
    older = [c for c, _ in out if cat[c] != "Cn"]
    if older:
        sys.exit("lowercase.json and Python %s disagree on code points assigned in Unicode 14.0: %s"
                 % (sys.version.split()[0], ["U+%04X" % c for c in older[:20]]))
    if not complete:
        print("warning: %s is partial (%s): only its %d listed code points were compared"
              % (os.path.relpath(LOWER, ROOT), doc.get("source", "no source"), len(ref)), file=sys.stderr)
    return out, doc.get("source")


def main():
    if unicodedata.unidata_version != "14.0.0":
        sys.exit("needs Python's unicodedata at Unicode 14.0.0 (PCRE2 10.42's version), found %s"
                 % unicodedata.unidata_version)
    with open(SRC) as f:
        onig = json.load(f)
    cps = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    cat = {c: unicodedata.category(chr(c)) for c in cps}
    sets = {cls: members(onig[cls]) for cls in CLASSES + ["w"]}
    for cls in CLASSES:
        moved = [c for c in cps if cat[c] != "Cn" and (c in sets[cls]) != in_category(cat[c], cls)]
        if moved:
            sys.exit("\\p{%s}: code points changed category since Unicode 14.0: %s" % (cls, [hex(c) for c in moved[:20]]))
    tagged = []
    for c in cps:
        if cat[c] != "Cn":
            continue
        sig = tuple(cls for cls in CLASSES + ["w"] if c in sets[cls])
        if not sig:
            continue  # in no class, as PCRE2 sees an unassigned code point
        if sig not in SIGNATURES:
            sys.exit("U+%04X: unexpected class signature %s" % (c, sig))
        tagged.append((c, SIGNATURES[sig]))
    runs = []
    for c, tag in tagged:
        if runs and runs[-1][1] == c - 1 and runs[-1][2] == tag:
            runs[-1][1] = c
        else:
            runs.append([c, c, tag])
    word = sets["w"]
    base = sets["L"] | sets["M"] | sets["Nd"] | {c for c in cps if cat[c] == "Pc"}
    if base - word:
        sys.exit("Oniguruma's \\w misses some of L, M, Nd, Pc: %s" % [hex(c) for c in sorted(base - word)[:20]])
    word_extras = word - base
    lower, lower_source = lowercase_additions(cps, cat)

    out = ['// Generated by tools/oracle/make_unicode_additions.py from tests/fixtures/tokenizer/onig_classes.json',
           '// and lowercase.json; do not edit. See unicode_additions.h.',
           '#include "text/unicode_additions.h"',
           '',
           'namespace ds4::text {',
           '',
           'std::span<const NewCharRange> new_char_ranges() {',
           '  using enum NewCharClass;',
           '  static constexpr NewCharRange kRanges[] = {']
    for a, b, tag in runs:
        out.append('      {0x%X, 0x%X, %s},' % (a, b, tag))
    out += ['  };', '  return kRanges;', '}', '', 'std::string_view word_extras() {',
            '  return %s;' % cxx_string(pcre_fragment(word_extras), 9), '}', '']
    if lower_source:
        out.append('// lowercase.json: %s' % lower_source)
    out.append('std::span<const LowercaseAddition> lowercase_additions() {')
    if lower:
        out.append('  static constexpr LowercaseAddition kAdditions[] = {')
        for c, to in lower:
            out.append('      {0x%X, %s},' % (c, u32_literal(to)))
        out += ['  };', '  return kAdditions;']
    else:
        out.append('  return {};')
    out += ['}', '', '}  // namespace ds4::text', '']
    with open(DST, "w", newline="\n") as f:
        f.write("\n".join(out))
    print("wrote %s (%d ranges, %d lowercase additions)" % (DST, len(runs), len(lower)), file=sys.stderr)


if __name__ == "__main__":
    main()
