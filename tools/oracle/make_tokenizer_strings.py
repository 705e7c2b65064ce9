#!/usr/bin/env python3
"""Writes the tokenizer test inputs into tests/fixtures/tokenizer/ (deterministic; plain python3, no packages):

  strings.jsonl      one JSON string per line: the texts every tokenizer is checked on
  decode_ids.jsonl   {"tokenizer": NAME, "ids": [...]} per line: id sequences whose decoding is checked
                     (random ids, partial UTF-8 byte tokens, special tokens)
  utf8_lossy.jsonl   {"hex": BYTES, "text": STRING}: byte strings, many of them invalid UTF-8, and CPython's
                     bytes.decode("utf-8", "replace") of them (one U+FFFD per maximal invalid subpart, the
                     rule Rust's String::from_utf8_lossy and so HF's ByteLevel decoder follow)
  synthetic/*.json   small tokenizer.json files that exercise what the real files do not: added-token
                     flags (lstrip, rstrip, single_word, normalized), Lowercase, TemplateProcessing,
                     ignore_merges, byte_fallback + unk, prefix/suffix BPE, other decoders

tools/oracle/tokenizer_reference.py turns these into reference ids and texts with HF `tokenizers`.
Run from anywhere: python3 tools/oracle/make_tokenizer_strings.py
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer")

# Vocabulary sizes of the real tokenizers (max id + 1), only used to draw random ids for decode tests.
REAL_VOCAB = {"qwen3": 151669, "deepseek_v3": 128815}


class Rng:
    """xorshift64*: the same sequence on every Python version."""

    def __init__(self, seed):
        self.s = seed or 1

    def next(self):
        s = self.s
        s ^= (s >> 12)
        s ^= (s << 25) & 0xFFFFFFFFFFFFFFFF
        s ^= (s >> 27)
        self.s = s
        return (s * 0x2545F4914F6CDD1D) & 0xFFFFFFFFFFFFFFFF

    def below(self, n):
        return self.next() % n

    def choice(self, seq):
        return seq[self.below(len(seq))]


def latin_contractions():
    out = []
    words = ["I", "you", "we", "they", "he", "she", "it", "that", "there", "who"]
    suffixes = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"]
    cases = [str.lower, str.upper, str.title, lambda s: s[:1] + s[1:].upper() if len(s) > 1 else s.upper(),
             lambda s: "".join(c.upper() if i % 2 else c for i, c in enumerate(s))]
    for i, w in enumerate(words):
        parts = []
        for j, suf in enumerate(suffixes):
            f = cases[(i + j) % len(cases)]
            parts.append(f(w) + f(suf))
        out.append(" ".join(parts))
    for suf in suffixes:
        for f in cases:
            out.append("X" + f(suf) + " " + f(suf) + "!" + f(suf).upper())
    out += [
        "I'M HERE, YOU'RE THERE, WE'VE GONE, THEY'LL SEE, HE'D KNOW, IT'S FINE, DON'T STOP",
        "'S 'T 'Re 'rE 'VE 'Ve 'M 'Ll 'lL 'D 's't're've'm'll'd",
        "don't won't can't shouldn't y'all ma'am o'clock rock 'n' roll 'tis 'twas",
        "James' book, the Joneses' house, O'Neil's pub, d'Artagnan, l'homme, dell'arte",
        "it\u2019s typographic \u2018quoted\u2019 \u201cdouble\u201d \u2019s \u2019t",
        "long s: \u017ftop, it'\u017f odd, IT'\u017f, Kelvin \u212a, 'K",
        "''s '''t 's's 't 're' 've'' a'b'c'd'e",
        "The quick brown fox jumps over the lazy dog. THE QUICK BROWN FOX! the Quick bRoWn fOx?",
        "Na\u00efve caf\u00e9 r\u00e9sum\u00e9 co\u00f6perate \u00fcber stra\u00dfe STRASSE \u1e9e \u00c6sir \u0152uvre \u00f8re \u00e5 \u0142\u00f3d\u017a \u010de\u0161tina",
        "Espa\u00f1ol: \u00bfQu\u00e9 tal? \u00a1Muy bien! Portugu\u00eas: n\u00e3o, cora\u00e7\u00e3o. Fran\u00e7ais: \u00e7a va, \u00eatre, no\u00ebl.",
        "Ti\u1ebfng Vi\u1ec7t c\u00f3 d\u1ea5u: ng\u01b0\u1eddi, \u0111\u01b0\u1eddng, Nguy\u1ec5n, h\u01b0\u1edbng d\u1eabn",
        "T\u00fcrk\u00e7e: \u0130stanbul, \u0131\u015f\u0131k, I\u0131 \u0130i; Az\u0259rbaycan dili",
        "\u0420\u0443\u0441\u0441\u043a\u0438\u0439 \u0442\u0435\u043a\u0441\u0442: \u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u0401\u043b\u043a\u0430. \u0423\u043a\u0440\u0430\u0457\u043d\u0441\u044c\u043a\u0430: \u0491\u0430\u043d\u043e\u043a, \u0457\u0436\u0430\u043a.",
        "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac: \u039a\u03b1\u03bb\u03b7\u03bc\u03ad\u03c1\u03b1 \u03ba\u03cc\u03c3\u03bc\u03b5; \u1f08\u03b8\u1fc6\u03bd\u03b1\u03b9 \u03c3\u03bf\u03c6\u03af\u03b1 \u03a3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2",
        "\u0540\u0561\u0575\u0565\u0580\u0565\u0576 \u10e5\u10d0\u10e0\u10d7\u10e3\u10da\u10d8 \u12a0\u121b\u122d\u129b \u13e3\u13b3\u13a9",
    ]
    return out


def scripts():
    return [
        "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e! \u092f\u0939 \u0939\u093f\u0928\u094d\u0926\u0940 \u092e\u0947\u0902 \u090f\u0915 \u0935\u093e\u0915\u094d\u092f \u0939\u0948\u0964 \u0915\u094d\u0937\u0924\u094d\u0930\u093f\u092f \u0936\u094d\u0930\u0940",
        "\u092d\u093e\u0930\u0924 \u090f\u0915 \u0935\u093f\u0936\u093e\u0932 \u0926\u0947\u0936 \u0939\u0948, \u091c\u093f\u0938\u0915\u0940 \u091c\u0928\u0938\u0902\u0916\u094d\u092f\u093e \u0967\u0966\u0966 \u0915\u0930\u094b\u0921\u093c \u0938\u0947 \u0905\u0927\u093f\u0915 \u0939\u0948\u0964",
        "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a \u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22\u0e44\u0e21\u0e48\u0e21\u0e35\u0e01\u0e32\u0e23\u0e40\u0e27\u0e49\u0e19\u0e27\u0e23\u0e23\u0e04\u0e23\u0e30\u0e2b\u0e27\u0e48\u0e32\u0e07\u0e04\u0e33",
        "\u0e01\u0e23\u0e38\u0e07\u0e40\u0e17\u0e1e\u0e21\u0e2b\u0e32\u0e19\u0e04\u0e23 \u0e2d\u0e21\u0e23\u0e23\u0e31\u0e15\u0e19\u0e42\u0e01\u0e2a\u0e34\u0e19\u0e17\u0e23\u0e4c \u0e51\u0e52\u0e53 \u0e40\u0e08\u0e49\u0e32\u0e2b\u0e19\u0e49\u0e32\u0e17\u0e35\u0e48",
        "\u09ac\u09be\u0982\u09b2\u09be \u09ad\u09be\u09b7\u09be: \u0986\u09ae\u09be\u09b0 \u09b8\u09cb\u09a8\u09be\u09b0 \u09ac\u09be\u0982\u09b2\u09be \u09e7\u09e8\u09e9",
        "\u0ba4\u0bae\u0bbf\u0bb4\u0bcd: \u0bb5\u0ba3\u0b95\u0bcd\u0b95\u0bae\u0bcd \u0b89\u0bb2\u0b95\u0bae\u0bcd \u0bef \u0bf0 \u0bf1",
        "\u0a2a\u0a70\u0a1c\u0a3e\u0a2c\u0a40 \u0a97\u0ac1\u0a9c\u0ab0\u0abe\u0aa4\u0ac0 \u0c24\u0c46\u0c32\u0c41\u0c17\u0c41 \u0c95\u0ca8\u0ccd\u0ca8\u0ca1 \u0d2e\u0d32\u0d2f\u0d3e\u0d33\u0d02 \u0dc3\u0dd2\u0d82\u0dc4\u0dbd",
        "\u0f56\u0f7c\u0f51\u0f0b\u0f61\u0f72\u0f42 \u1019\u103c\u1014\u103a\u1019\u102c\u1005\u102c \u1797\u17b6\u179f\u17b6\u1781\u17d2\u1798\u17c2\u179a \u0ea5\u0eb2\u0ea7",
        "\u0628\u0650\u0633\u0652\u0645\u0650 \u0671\u0644\u0644\u0651\u064e\u0647\u0650 \u0671\u0644\u0631\u0651\u064e\u062d\u0652\u0645\u064e\u0640\u0670\u0646\u0650 \u0671\u0644\u0631\u0651\u064e\u062d\u0650\u064a\u0645\u0650",
        "\u0627\u0644\u0639\u064e\u0631\u064e\u0628\u0650\u064a\u0651\u064e\u0629\u064f \u0644\u064f\u063a\u064e\u0629\u064c \u062c\u064e\u0645\u0650\u064a\u0644\u064e\u0629\u064c\u060c \u0643\u064e\u062a\u064e\u0628\u064e \u0627\u0644\u0637\u0651\u064e\u0627\u0644\u0650\u0628\u064f \u0627\u0644\u062f\u0651\u064e\u0631\u0652\u0633\u064e\u061f",
        "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645! \u0647\u0630\u0627 \u0646\u0635 \u0639\u0631\u0628\u064a \u0628\u062f\u0648\u0646 \u062a\u0634\u0643\u064a\u0644 \u0661\u0662\u0663 \u0640\u0640\u0640\u0640 \u06a9\u06cc\u0627 \u0641\u0627\u0631\u0633\u06cc \u06f1\u06f2\u06f3",
        "\u05d1\u05b0\u05bc\u05e8\u05b5\u05d0\u05e9\u05b4\u05c1\u05d9\u05ea \u05d1\u05b8\u05bc\u05e8\u05b8\u05d0 \u05d0\u05b1\u05dc\u05b9\u05d4\u05b4\u05d9\u05dd \u05d0\u05b5\u05ea \u05d4\u05b7\u05e9\u05b8\u05bc\u05c1\u05de\u05b7\u05d9\u05b4\u05dd",
        "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd! \u05e2\u05d1\u05e8\u05d9\u05ea \u05d1\u05dc\u05d9 \u05e0\u05d9\u05e7\u05d5\u05d3, \u05d9\u05d9\u05b4\u05d3\u05d9\u05e9 \u05f0\u05f1\u05f2",
        "\u0627\u064f\u0631\u062f\u064f\u0648 \u0632\u0628\u0627\u0646 \u06c1\u06d2\u06d4 \u067e\u0627\u06a9\u0633\u062a\u0627\u0646 \u0632\u0646\u062f\u06c1 \u0628\u0627\u062f",
        "\u4f60\u597d\uff0c\u4e16\u754c\uff01\u8fd9\u662f\u4e00\u4e2a\u4e2d\u6587\u53e5\u5b50\u3002\u6211\u4eec\u5728\u6d4b\u8bd5\u5206\u8bcd\u5668\u3002",
        "\u7e41\u9ad4\u4e2d\u6587\uff1a\u81fa\u7063\u3001\u9999\u6e2f\u3001\u6fb3\u9580\u3002\u300c\u5f15\u865f\u300d\u300e\u96d9\u5f15\u865f\u300f\u3010\u62ec\u5f27\u3011",
        "\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3067\u3059\u3002\u3072\u3089\u304c\u306a\u3001\u30ab\u30bf\u30ab\u30ca\u3001\u6f22\u5b57\u3002\uff76\uff80\uff76\uff85 \u30fc\u30fb\u309d\u309e",
        "\u6771\u4eac\u90fd\u6e0b\u8c37\u533a\u3067\u30e9\u30fc\u30e1\u30f3\u3092\u98df\u3079\u307e\u3057\u305f\u3002\u3068\u3066\u3082\u7f8e\u5473\u3057\u304b\u3063\u305f\u3067\u3059\uff01",
        "\u5168\u89d2\u82f1\u6570\uff1a\uff21\uff22\uff23\uff41\uff42\uff43\uff11\uff12\uff13\uff01\uff1f\uff08\uff09\u3000\u5168\u89d2\u7a7a\u683c",
        "\ud55c\uad6d\uc5b4 \ubb38\uc7a5\uc785\ub2c8\ub2e4. \uc548\ub155\ud558\uc138\uc694! \uc11c\uc6b8\ud2b9\ubcc4\uc2dc \uac15\ub0a8\uad6c",
        "\u1100\u1161\u11a8 \u1112\u1161\u11ab\u1100\u1173\u11af (\uc870\ud569\ud615 \uc790\ubaa8) \u3131\u314f\u3131 \u3147\u3163",
        "\u4e2d\u6587English\u6df7\u5408mixed\u6587\u672c123\u6570\u5b57abc\u3002Hello\u4e16\u754c",
        "\u3053\u308c\u306fpen\u3067\u3059\u3002I am \u5b66\u751f\u3002\u0645\u0631\u062d\u0628\u0627 world \u05e9\u05dc\u05d5\u05dd 123",
        "\u1820\u1824\u1837\u1822\u182d\u180e\u1821 \u182e\u1823\u1829\u182d\u1823\u182f \u1865\u1863",
        "\u0394\u03b5\u03bd \u03be\u03ad\u03c1\u03c9 \u2014 \u0431\u0443\u043a\u0432\u0430 \u2013 \u05d0\u05d1\u05d2 \u2026 \u3042\u3044\u3046",
    ]


def emoji():
    return [
        "\U0001F600\U0001F603\U0001F604\U0001F601\U0001F606 \U0001F923\U0001F602",
        "Family: \U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466 couple: \U0001F469\u200d\u2764\ufe0f\u200d\U0001F468",
        "Skin tones: \U0001F44D\U0001F3FB \U0001F44D\U0001F3FC \U0001F44D\U0001F3FD \U0001F44D\U0001F3FE \U0001F44D\U0001F3FF",
        "\U0001F9D1\U0001F3FD\u200d\U0001F4BB \U0001F469\U0001F3FF\u200d\U0001F52C \U0001F3F3\ufe0f\u200d\U0001F308 \U0001F3F4\u200d\u2620\ufe0f",
        "Flags: \U0001F1FA\U0001F1F8 \U0001F1EF\U0001F1F5 \U0001F1E9\U0001F1EA\U0001F1EB\U0001F1F7 \U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F",
        "Keycaps: 1\ufe0f\u20e3 2\ufe0f\u20e3 #\ufe0f\u20e3 *\u20e3 and \u263a\ufe0f \u263a\ufe0e \u2764 \u2764\ufe0f",
        "I love it\U0001F60D!!! so good\U0001F44C\U0001F44C\U0001F525\U0001F525\U0001F525",
        "\U0001F600 \U0001F600\U0001F600 \U0001F600  \U0001F600\n\U0001F600\t\U0001F600",
        "\U0001FAE0\U0001FAE1\U0001F979 \U0001FA77\U0001FAE8\U0001FACE\U0001FACF\U0001FABC\U0001FABD \U0001F426\u200d\U0001F525 \U0001FAE9\U0001FAC6",
        "text\U0001F44B\U0001F3FDtext \U0001F44B\U0001F3FD.\U0001F44B\U0001F3FD,\U0001F44B\U0001F3FD",
        "\u2600\u2601\u2602\u2603\u2604\u2605\u2606 \u2190\u2191\u2192\u2193 \u2660\u2663\u2665\u2666 \u266a\u266b \u2713\u2717 \u00a9\u00ae\u2122",
        "Math: \u2200x\u2208\u211d, \u2203y: x\u00b2+y\u00b2\u2264r\u00b2 \u2227 \u00ac(a\u2228b) \u2192 \u222b\u2080^\u221e e^{-x} dx = 1 \u2211 \u220f \u221a \u2248 \u2260 \u00b1 \u00d7 \u00f7",
        "Currency: $100 \u20ac200 \u00a3300 \u00a5400 \u20b9500 \u20bf0.01 \u20a9 \u20bd \u00a2 \u20aa",
        "Box: \u250c\u2500\u2510\u2502 \u2502\u2514\u2500\u2518 \u2588\u2593\u2592\u2591 \u25a0\u25a1\u25b2\u25bc\u25cf\u25cb",
    ]


def numerals():
    return [
        "\u2460\u2461\u2462\u2463\u2464 \u2474\u2475\u2476 \u2488\u2489 \u24ea \u2776\u2777 \u3251\u3252",
        "Roman: \u2160 \u2161 \u2162 \u2163 \u2164 \u2167 \u216b \u2170 \u2171 \u217f \u2180 \u2181 and VIII XIV MMXXIV",
        "Superscripts: x\u00b2 y\u00b3 z\u00b9 10\u2070 2\u2074\u2075\u2076 H\u2082O CO\u2082 x\u2081\u2082\u2083 \u00bd \u00bc \u00be \u2153 \u215e",
        "Math digits: \U0001D7D8\U0001D7D9\U0001D7DA \U0001D7CE\U0001D7CF \U0001D7E2\U0001D7E3 \U0001D7EC\U0001D7ED \U0001D7F6\U0001D7FF",
        "Arabic-Indic: \u0660\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668\u0669 extended \u06f0\u06f1\u06f2\u06f3\u06f4\u06f5\u06f6\u06f7\u06f8\u06f9",
        "Devanagari \u0966\u0967\u0968\u0969\u096a Bengali \u09e6\u09e7\u09e8 Thai \u0e50\u0e51\u0e52 Lao \u0ed0\u0ed1 Tibetan \u0f20\u0f21 Myanmar \u1040\u1041",
        "Fullwidth \uff10\uff11\uff12\uff13\uff14\uff15 and CJK \u4e00\u4e8c\u4e09\u56db\u4e94 \u3007 \u58f9\u8cb3\u53c3 \u5341\u767e\u5343\u4e07",
        "Ethiopic \u1369\u136a\u136b Tamil \u0be6\u0be7\u0bf0\u0bf1\u0bf2 Khmer \u17e0\u17e1 Mongolian \u1810\u1811 Adlam \U0001E950\U0001E951",
        "1 12 123 1234 12345 123456 1234567 12345678 123456789 1234567890",
        "12345678901234567890123456789012345678901234567890",
        "3.14159 2.71828 -0.5 +1e10 6.022e23 1,234,567.89 1.234.567,89 1'000'000 0x1F 0b1010 0o777",
        "Phone +1 (555) 123-4567, date 2024-03-15T10:30:00Z, time 23:59:59.999, IP 192.168.0.1, v1.2.3-rc.4",
        "\u0661\u0662\u0663abc\u0664\u0665 \u0967\u0968\u0969\u0915\u0916 12\u0663 \u2460a\u2461b \u00b2\u00b3x",
        "Numbers: 0 00 000 0000 007 1000000 999999999999 -42 4\u00bd 2\u00b3=8",
        "\U00011F50\U00011F51\U00011F52 \U0001E4F0\U0001E4F1 \U00011BF0\U00011BF1 \U00016D70\U00016D71",
    ]


def code():
    return [
        "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
        "#include <iostream>\nint main() {\n\tstd::cout << \"Hello, world!\" << std::endl;\n\treturn 0;\n}\n",
        "for (let i = 0; i < arr.length; i++) {\n  if (arr[i] === undefined) { continue; }\n  console.log(`${i}: ${arr[i]}`);\n}",
        "{\"name\": \"test\", \"values\": [1, 2.5, -3e-4, true, false, null], \"nested\": {\"a\": \"\\u00e9\\n\"}}",
        "<html>\n  <head><title>T&amp;C</title></head>\n  <body class=\"main\">&lt;p&gt; &#169; &nbsp;</body>\n</html>",
        "SELECT u.id, COUNT(*) AS n FROM users u LEFT JOIN orders o ON o.user_id = u.id WHERE u.created_at >= '2024-01-01' GROUP BY u.id HAVING n > 5;",
        "#!/bin/bash\nset -euo pipefail\nfor f in *.txt; do\n  grep -E '^[a-z]+$' \"$f\" | sort -u >> out.log 2>&1\ndone",
        "fn main() -> Result<(), Box<dyn Error>> {\n    let v: Vec<u8> = vec![0xFF; 16];\n    println!(\"{:?}\", &v[..4]);\n    Ok(())\n}",
        "x = [i**2 for i in range(10) if i % 2 == 0]  # squares\ny = {k: v for k, v in zip('abc', (1, 2, 3))}\n",
        "regex: ^(?:[a-zA-Z0-9._%+-]+)@(?:[a-zA-Z0-9-]+\\.)+[a-zA-Z]{2,}$ and \\d{3}-\\d{4} \\s+ \\p{L}",
        "if (a<b && c>d || !e) { x += y << 2; z = ~w ^ 0xFF; p->q = &r; } // comment /* block */",
        "\\begin{equation}\n  E = mc^2 \\quad \\frac{\\partial u}{\\partial t} = \\alpha \\nabla^2 u\n\\end{equation}",
        "| col1 | col2 |\n|------|------|\n| `a`  | **b** |\n\n> quote\n\n- item\n  - nested\n\n```python\nprint('hi')\n```",
        "class Foo(Base):\n    \"\"\"Docstring.\"\"\"\n\n    def __init__(self, x: int = 0) -> None:\n        super().__init__()\n        self._x = x\n\n\n",
        "    indented four\n\tindented tab\n\t\ttwo tabs\n        eight spaces\n  \t mixed",
        "a==b!=c<=d>=e=>f->g::h...i..j;;k,,l!!m??n%%o^^p&&q||r",
        "https://example.com/path/to/page?query=1&b=%20x#frag user@mail.co.uk file:///C:/Windows/System32",
        "C:\\Users\\name\\Documents\\file.txt /usr/local/bin/python3 ~/.config/app/settings.json",
        "import numpy as np\nA = np.zeros((3, 4), dtype=np.float32)\nA[:, 1:] += 1e-3\nprint(A.T @ A)\n",
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><root attr='v'><![CDATA[<raw>]]></root>",
        "base64: SGVsbG8gV29ybGQhIFRoaXMgaXMgYSB0ZXN0Lg== hex: deadbeefcafebabe0123456789abcdef",
        "uuid 123e4567-e89b-12d3-a456-426614174000 sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    ]


def whitespace():
    out = []
    for n in [1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 64]:
        out.append("a" + " " * n + "b")
    out += [
        " ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r\n\r\n", "\r", " \n", "\n ", " \t \n ",
        "trailing   ", "trailing\t", "trailing\n", "trailing \n", "trailing\r\n", "trailing \u00a0",
        "   leading", "\tleading", "\nleading", "\r\nleading", " \n leading",
        "a\nb\n\nc\n\n\nd", "a\r\nb\r\n\r\nc", "a \nb  \n c", "a\t\tb\t c \td",
        "line1\r\nline2\rline3\nline4\u2028line5\u2029line6\u0085line7\u000bline8\u000cline9",
        "nbsp\u00a0nbsp  \u00a0 thin\u2009space hair\u200aspace em\u2003space ideo\u3000space figure\u2007x narrow\u202fx",
        "zero\u200bwidth\u200cnon\u200djoiner\u2060word\ufeffbom",
        "mongolian\u180evowel\u180e separator \u180e \u180e\u180e x",
        "seps\u001cfile\u001dgroup\u001erecord\u001funit \u001c \u001f",
        "   \n   \n   ", "\n\n\n\n\n\n\n\n", " \r\n \r\n ", "\t \t \t", "x \t\n\r\u000b\u000c y",
        "end with spaces and newline  \n", "   ", "\u3000\u3000\u3000", "\u00a0\u00a0", " \u00a0 ",
        "word \u2003 word \u2003\u2003 word", "a  \nb", "a \u00a0b", "a\u00a0 b", "a  ,  b  .  c",
        "!!! ??? ... ,,, ;;; ::: --- ___ *** ### @@@",
        "tab\tinside\ttext\t\tand\t\t\tmore", "  multiple   spaces   between   words  ",
        "(\n  nested\n)\n", "{\n\t}\n\n", "x\n\t\ty", ".\n\n.", "\u00a0\n\u00a0",
    ]
    return out


def special_text():
    return [
        "<|im_start|>user\nHello, who are you?<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi<|im_end|>",
        "<|endoftext|>", "text<|endoftext|>text", "<|im_start|><|im_start|><|im_end|>",
        "<|im_start", "|im_start|>", "<|im_start|", "<<|im_end|>>", "< |im_end| >", "<|IM_START|>",
        "<think>\nLet me think.\n</think>\n\nThe answer is 42.", "<think></think>", "</think>text<think>",
        "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", "<tool_response>ok</tool_response>",
        "<|vision_start|><|image_pad|><|vision_end|>", "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>",
        " <|im_start|> spaced <|im_end|> ", "\n<|im_end|>\n", "user<|im_end|>assistant",
        "<\uff5cbegin\u2581of\u2581sentence\uff5c>Hello", "<\uff5cUser\uff5c>Hi<\uff5cAssistant\uff5c>Hey<\uff5cend\u2581of\u2581sentence\uff5c>",
        "<\uff5ctool\u2581calls\u2581begin\uff5c><\uff5ctool\u2581call\u2581begin\uff5c>function<\uff5ctool\u2581sep\uff5c>f\n",
        "<\uff5cplace\u2581holder\u2581no\u25815\uff5c> <\uff5cplace\u2581holder\u2581no\u2581799\uff5c>",
        "<\uff5cbegin of sentence\uff5c> <|begin\u2581of\u2581sentence|> <\uff5c\uff5c>",
        "<s> </s> <unk> <pad> <mask> [CLS] [SEP] [MASK] <|user|> <|assistant|>",
        "<|im_start|>user\n\u4f60\u597d<|im_end|><|endoftext|>\U0001F600<|im_start|>",
        "HELLO hello Hello hElLo <mask>word word<mask> <mask> [SEP]  x",
        "say <word> and a<word> and <word>b and <word>. and _<word>_ and \u00e9<word>",
        "xyz Xyz xyzw wxyz XYZ. -xyz- \u00dcn\u00ef \u00fcn\u00ef UN\u00cf un\u0308i\u0308",
        "text   <mask>   more   [SEP]   end   <both>   both   ",
        "<s>inner</s><s></s>", "\u2581\u2581leading metaspace \u2581 char", "##prefix##like text</w> end</w>",
    ]


def marks_and_unicode_edges():
    return [
        "e\u0301 a\u0300 o\u0302 n\u0303 u\u0308 c\u0327 (decomposed, NFC composes them)",
        "A\u030a \u212b \u00c5 \u2126 \u03a9 \u212a K (singletons and composed forms)",
        "a\u0323\u0302 a\u0302\u0323 q\u0307\u0323 q\u0323\u0307 (canonical reordering)",
        "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u0336\u0317\u032c\u0348L\u0334G\u0315O",
        "\u0301 leading mark, 1\u0301 mark after digit, !\u0301 mark after punct, \u00a0\u0301 after nbsp",
        " \u0301\u0302 space then marks, x\u20dd enclosing, 1\u20e3 keycap",
        "Tie\u0302\u0301ng Vie\u0323\u0302t (NFD Vietnamese)",
        "\u0915\u093f \u0915\u094d\u0937 \u0dc1\u0dca\u200d\u0dbb\u0dd3 \u0d15\u0d4d\u200d",
        "\ufb01 \ufb02 \ufb00 \u2163 \u2075 \u33a1 \u3392 (compatibility characters stay under NFC)",
        "\u00c3\u00a9 \u00c3\u00a8 \u00e2\u20ac\u2122 \u00e2\u20ac\u0153 (mojibake, valid UTF-8)",
        "\u007f\u0080\u0081\u009f \u07ff\u0800 \ufffd \ufeff \uffff\ufffe \ud7ff\ue000 \uf8ff \U0010ffff \U0001f000",
        "\u0000 nul \u0001\u0002\u0003\u001b[31mred\u001b[0m \u0007 bell",
        "\ue000\ue001 private use \U000F0000 \U00100000 plane 15/16",
        "\U00031350\U00031351 CJK Ext H, \U0002EBF0 Ext I, \U00011F04\U00011F05 Kawi, \U0001E4D0\U0001E4D1 Nag Mundari",
        "\U000105C0\U000105C1 Todhri, \U00011380\U00011381 Tulu-Tigalari, \U00011BC0 Sunuwar, \U00010D50 Garay",
        "\u0378\u0379 unassigned \u0e3b \U000E0100 variation selector supplement \U000E0001 tag",
        "ab\u0308c\u0327d \u1e9b\u0323 \u0391\u0301\u0345 \u1f71 \u0387 \u037e ;",
        "\u3099\u309a \u304b\u3099 \u30cf\u309a \u304c \u30d1 (kana voicing marks)",
    ]


def random_mix(rng, count):
    pool = (list("abcdefghijklmnopqrstuvwxyz") + list("ABCDEFGHIJKLMNOPQRSTUVWXYZ") + list("0123456789") +
            [" ", " ", " ", "  ", "\t", "\n", "\r\n", "\n\n", "'", "'s", "'T", "'re", "'LL", ".", ",", "!", "?", "-",
             "_", "(", ")", "<", ">", "|", "\"", "#", "$", "%", "&", "*", "/", "\\", "{", "}", "[", "]", "@", "^", "~", "`",
             "\u00e9", "e\u0301", "\u0301", "\u00f1", "\u00df", "\u0130", "\u017f", "\u4e2d", "\u6587", "\u3002", "\u3042",
             "\u30a2", "\ud55c", "\u1100\u1161", "\u0645", "\u064e", "\u05e9", "\u05b8", "\u0915", "\u093f", "\u094d",
             "\u0e01", "\u0e31", "\u0661", "\u06f2", "\u2460", "\u2167", "\u00b2", "\U0001D7D8", "\uff11", "\U0001F600",
             "\U0001F44D\U0001F3FD", "\u200d", "\ufe0f", "\U0001F1FA\U0001F1F8", "\u00a0", "\u3000", "\u2028", "\u0085",
             "\u180e", "\u200b", "\ufffd", "\u2014", "\u2019", "\u201c", "\u2026", "\u00ab", "\u00bb", "\u20ac",
             "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "<\uff5cUser\uff5c>",
             "<\uff5cbegin\u2581of\u2581sentence\uff5c>", "\u2581", "hello", "HELLO", "<mask>", "[SEP]", "<word>", "xyz"])
    out = []
    for _ in range(count):
        n = 1 + rng.below(40)
        out.append("".join(rng.choice(pool) for _ in range(n)))
    return out


def words_text(rng, words, n, seps):
    return "".join(rng.choice(words) + rng.choice(seps) for _ in range(n))


def long_inputs(rng, pieces):
    out = []
    paragraph = " ".join(pieces[:40])
    out.append((paragraph + "\n\n") * 3)
    out.append("a" * 5000)
    out.append(" " * 3000 + "x")
    out.append("\n" * 1000 + "end")
    out.append("x" + " \t" * 800)
    out.append("".join(str(i) for i in range(1500)))
    out.append("\U0001F600" * 600)
    out.append("\u4e2d\u6587\u5206\u8bcd\u6d4b\u8bd5" * 500)
    out.append("abc\u0301" * 700)
    out.append(("def f(x):\n    return x * 2\n\n" * 120))
    latin = ["the", "of", "and", "to", "in", "is", "tokenizer", "merges", "vocabulary", "it's", "don't", "HELLO",
             "Qwen", "DeepSeek", "byte-level", "pair", "encoding"]
    out.append(words_text(rng, latin, 1200, [" ", " ", " ", ", ", ". ", "\n", "  "]))
    mixed = latin + ["\u4e2d\u6587", "\u65e5\u672c\u8a9e", "\ud55c\uad6d\uc5b4", "\u0627\u0644\u0639\u0631\u0628\u064a\u0629",
                     "\u05e2\u05d1\u05e8\u05d9\u05ea", "\u0939\u093f\u0928\u094d\u0926\u0940", "\u0e44\u0e17\u0e22",
                     "\U0001F600", "123", "\u2460", "<|im_start|>", "\u00e9t\u00e9"]
    out.append(words_text(rng, mixed, 1500, [" ", "", "\n", "\t", "  ", "\u3000", ",", "\u3002"]))
    out.append("".join(chr(0x4E00 + rng.below(0x5000)) for _ in range(3000)))
    out.append("".join(chr(0xAC00 + rng.below(11172)) + (" " if rng.below(5) == 0 else "") for _ in range(2000)))
    return out


def unicode_sweep(rng):
    """Blocks of code points from across the BMP and the supplementary planes, a few per string, so the
    regex character classes and NFC are checked on every script, not only the common ones."""
    out = []
    starts = list(range(0x00A0, 0x3400, 0x80)) + list(range(0xA000, 0xAC00, 0x100)) + list(range(0xF900, 0x10000, 0x100)) + \
        list(range(0x10000, 0x14700, 0x400)) + list(range(0x16800, 0x1FC00, 0x400))
    for s in starts:
        cps = [c for c in range(s, s + 24) if not (0xD800 <= c <= 0xDFFF)]
        text = ""
        for c in cps:
            text += chr(c)
            r = rng.below(6)
            if r == 0:
                text += " "
            elif r == 1:
                text += "a"
            elif r == 2:
                text += "1"
        out.append(text)
    return out


def make_strings():
    rng = Rng(0x5EED1234)
    strings = []
    strings += latin_contractions()
    strings += scripts()
    strings += emoji()
    strings += numerals()
    strings += code()
    strings += whitespace()
    strings += special_text()
    strings += marks_and_unicode_edges()
    strings += unicode_sweep(rng)
    strings += random_mix(rng, 160)
    strings += long_inputs(rng, strings)
    strings.append("")
    return strings


# ---------------------------------------------------------------------------------------------------------
# Synthetic tokenizers. Each gets a small BPE trained here (deterministically) on a built-in corpus.

CORPUS = (
    "the quick brown fox jumps over the lazy dog. hello world, hello there! it's a test of the tokenizer; "
    "we're testing merges and vocabularies. they'll see that words like tokenization, encoding and decoding "
    "repeat: tokenization tokenization encoding decoding. numbers 123 456 7890 and code: def f(x): return x. "
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber stra\u00dfe. THE QUICK BROWN FOX. Hello World. xyz xyzzy."
)


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def train(words, n_merges, join):
    """Plain BPE training: words are lists of symbols; the most frequent pair wins, ties broken by the
    pair's spelling. join(a, b) spells the merged symbol. Returns the merges in order."""
    seqs = [list(w) for w in words]
    merges = []
    for _ in range(n_merges):
        counts = {}
        for s in seqs:
            for a, b in zip(s, s[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + 1
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], p))
        if counts[best] < 2:
            break
        merges.append(best)
        new = join(*best)
        for s in seqs:
            i = 0
            while i < len(s) - 1:
                if s[i] == best[0] and s[i + 1] == best[1]:
                    s[i:i + 2] = [new]
                else:
                    i += 1
    return merges


def added(id_, content, special=False, normalized=None, lstrip=False, rstrip=False, single_word=False):
    return {"id": id_, "content": content, "single_word": single_word, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": (not special) if normalized is None else normalized, "special": special}


def synth_bytelevel_flags():
    """GPT-2 style byte-level BPE with Lowercase, merges as "a b", ignore_merges, and added tokens with
    every flag; BOS/EOS through TemplateProcessing."""
    b2u = bytes_to_unicode()
    vocab = {b2u[b]: i for i, b in enumerate(sorted(b2u))}
    words = []
    for w in CORPUS.lower().split(" "):
        words.append([b2u[b] for b in (" " + w).encode("utf-8")])
    merges = train(words, 300, lambda a, b: a + b)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    n = len(vocab)
    tokens = [
        added(n, "<s>", special=True), added(n + 1, "</s>", special=True),
        added(n + 2, "<mask>", special=True, lstrip=True),
        added(n + 3, "[SEP]", special=True, rstrip=True),
        added(n + 4, "<both>", special=False, normalized=False, lstrip=True, rstrip=True),
        added(n + 5, "<word>", normalized=False, single_word=True),
        added(n + 6, "hello", normalized=True),
        added(n + 7, "xyz", normalized=True, single_word=True),
        added(n + 8, "\u00dcn\u00ef", normalized=True),
        added(vocab["\u0120the"], "\u0120the", normalized=False),
    ]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": tokens,
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [n], "tokens": ["<s>"]},
                               "</s>": {"id": "</s>", "ids": [n + 1], "tokens": ["</s>"]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": [a + " " + b for a, b in merges]},
    }


def synth_llama():
    """SentencePiece-style BPE: Prepend + Replace normalizers, no pre-tokenizer, byte_fallback with a
    fused unk, merges as pairs, "<s> $A" template, and the Replace/ByteFallback/Fuse/Strip decoder. The
    byte tokens of 4-byte lead bytes are missing, so emoji and other astral characters become <unk>."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        if not 0xF0 <= b <= 0xF4:
            vocab["<0x%02X>" % b] = len(vocab)
    chars = sorted(set("\u2581" + CORPUS.replace(" ", "")) - set("\u00fc"))  # "\u00fc" only via byte fallback
    for c in chars:
        vocab.setdefault(c, len(vocab))
    words = [list("\u2581" + w) for w in CORPUS.split(" ")]
    merges = train(words, 250, lambda a, b: a + b)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    n = len(vocab)
    tokens = [added(0, "<unk>", special=True), added(1, "<s>", special=True), added(2, "</s>", special=True),
              added(n, "<|user|>", special=True)]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": tokens,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }


def synth_affixes():
    """BPE with continuing_subword_prefix "##" and end_of_word_suffix "</w>", an unfused unk, a Split
    pre-tokenizer that removes white space (Removed behaviour) and cuts punctuation with
    MergedWithPrevious, and the Metaspace decoder."""
    prefix, suffix = "##", "</w>"
    vocab = {"[UNK]": 0}
    words = []
    for w in CORPUS.lower().replace(".", " ").replace(",", " ").split():
        if not w:
            continue
        syms = [c if i == 0 else prefix + c for i, c in enumerate(w)]
        syms[-1] += suffix
        words.append(syms)
        for s in syms:
            vocab.setdefault(s, len(vocab))
    merges = train(words, 200, lambda a, b: a + b[len(prefix):])
    for a, b in merges:
        vocab.setdefault(a + b[len(prefix):], len(vocab))
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [added(0, "[UNK]", special=True)],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Removed", "invert": False},
            {"type": "Split", "pattern": {"Regex": "[.,!?;:]"}, "behavior": "MergedWithPrevious", "invert": False}]},
        "post_processor": {"type": "BertProcessing", "sep": ["[UNK]", 0], "cls": ["[UNK]", 0]},
        "decoder": {"type": "Metaspace", "replacement": "#", "prepend_scheme": "always", "split": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": "[UNK]", "continuing_subword_prefix": prefix,
                  "end_of_word_suffix": suffix, "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }


def synth_split_behaviors():
    """Byte-level BPE behind a Sequence of Splits with the remaining behaviours (MergedWithNext,
    Contiguous, inverted Isolated) and a literal String pattern; no added tokens, null post-processor
    and decoder (tokens joined with spaces)."""
    b2u = bytes_to_unicode()
    vocab = {b2u[b]: i for i, b in enumerate(sorted(b2u))}
    words = [[b2u[b] for b in w.encode("utf-8")] for w in CORPUS.split(" ")]
    merges = train(words, 150, lambda a, b: a + b)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": {"type": "NFKC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"String": ", "}, "behavior": "MergedWithNext", "invert": False},
            {"type": "Split", "pattern": {"Regex": "\\p{N}"}, "behavior": "Contiguous", "invert": False},
            {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Isolated", "invert": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]},
        "post_processor": None, "decoder": None,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }


SYNTHETIC = {
    "synth_bytelevel_flags": synth_bytelevel_flags,
    "synth_llama": synth_llama,
    "synth_affixes": synth_affixes,
    "synth_split_behaviors": synth_split_behaviors,
}


def make_decode_ids(synth_sizes):
    rng = Rng(0xDEC0DE)
    sizes = dict(REAL_VOCAB)
    sizes.update(synth_sizes)
    out = []
    for name in sorted(sizes):
        n = sizes[name]
        for k in range(40):
            length = 1 + rng.below(30)
            if k % 4 == 0:  # low ids: single bytes and short pieces, often partial UTF-8
                ids = [rng.below(min(n, 400)) for _ in range(length)]
            elif k % 4 == 1:  # the top of the range: added and special tokens, plus a few unknown ids
                ids = [max(0, n - 1 - rng.below(min(n, 60)) + (5 if rng.below(10) == 0 else 0)) for _ in range(length)]
            else:
                ids = [rng.below(n) for _ in range(length)]
            out.append({"tokenizer": name, "ids": ids})
    return out


def make_utf8_lossy():
    rng = Rng(0xBAD0F8)
    interesting = [b"\xc2", b"\xdf", b"\xe0", b"\xe0\xa0", b"\xe0\x80", b"\xed\xa0\x80", b"\xed\x9f\xbf", b"\xef\xbf\xbd",
                   b"\xf0", b"\xf0\x90", b"\xf0\x90\x80", b"\xf0\x8f\xbf\xbf", b"\xf4\x8f\xbf\xbf", b"\xf4\x90\x80\x80",
                   b"\xf5", b"\xff", b"\xfe", b"\xc0\xaf", b"\xc1\xbf", b"\x80", b"\xbf", b"\x80\x80", b"a", b" ",
                   "\u00e9".encode(), "\u4e2d".encode(), "\U0001F600".encode(), b"\x00"]
    rows = []
    for _ in range(400):
        n = 1 + rng.below(12)
        data = b"".join(interesting[rng.below(len(interesting))] if rng.below(3) else bytes([rng.below(256)])
                        for _ in range(n))
        rows.append({"hex": data.hex(), "text": data.decode("utf-8", "replace")})
    return rows


def write_jsonl(path, rows):
    with open(path, "w", encoding="ascii", newline="\n") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=True) + "\n")


def main():
    os.makedirs(os.path.join(OUT, "synthetic"), exist_ok=True)
    strings = make_strings()
    assert len(strings) >= 500, len(strings)
    write_jsonl(os.path.join(OUT, "strings.jsonl"), strings)
    synth_sizes = {}
    for name, build in SYNTHETIC.items():
        tok = build()
        ids = list(tok["model"]["vocab"].values()) + [t["id"] for t in tok["added_tokens"]]
        synth_sizes[name] = max(ids) + 1
        with open(os.path.join(OUT, "synthetic", name + ".json"), "w", encoding="ascii", newline="\n") as f:
            json.dump(tok, f, ensure_ascii=True, indent=1)
            f.write("\n")
    write_jsonl(os.path.join(OUT, "decode_ids.jsonl"), make_decode_ids(synth_sizes))
    write_jsonl(os.path.join(OUT, "utf8_lossy.jsonl"), make_utf8_lossy())
    print("wrote %d strings, %d synthetic tokenizers to %s" % (len(strings), len(SYNTHETIC), OUT), file=sys.stderr)


if __name__ == "__main__":
    main()
