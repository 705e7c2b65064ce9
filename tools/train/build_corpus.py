#!/usr/bin/env python3
"""Build the training corpus of the default model from Debian packages (stdlib only).

Reads text that build_corpus.sh has installed or dumped, cleans it, synthesises chat-formatted
question/answer conversations from the same sources, and writes gzip-compressed JSON-lines shards:

    {"src": "austen", "text": "..."}                                   plain prose document
    {"src": "wordnet_qa", "messages": [{"role": "user", ...}, ...]}    a conversation

Conversations are stored as messages, not as rendered text: train.py renders them with the same
Qwen-style chat template that ships in tokenizer_config.json, so training and inference agree.

Every source has public-domain or permissive redistribution terms; manifest.json names each
source, its Debian package and its licence (models/README.md repeats the table).

Deterministic: the same packages give byte-identical shards (fixed seed, sorted inputs).
"""
import argparse
import gzip
import hashlib
import json
import os
import random
import re
import sys
import unicodedata

SEED = 20261129

# id -> (Debian package(s), what, licence)
SOURCES = {
    "austen": ("r-cran-janeaustenr",
               "Jane Austen's six completed novels (Sense and Sensibility, Pride and Prejudice, "
               "Mansfield Park, Emma, Northanger Abbey, Persuasion)",
               "texts in the public domain; package MIT (Julia Silge)"),
    "web_bible": ("sword-text-web",
                  "World English Bible (modern English translation)",
                  "public domain (\"World English Bible\" is a trademark of eBible.org)"),
    "wordnet": ("wordnet-base",
                "WordNet 3.0 glosses, example sentences and synonym sets",
                "WordNet 3.0 licence (Princeton University; permissive, BSD-like)"),
    "devil": ("dict-devil",
              "Ambrose Bierce, The Devil's Dictionary (1911)",
              "public domain"),
    "jargon": ("dict-jargon",
               "The Jargon File 4.4.7",
               "public domain"),
    "fortunes": ("fortunes, fortunes-min",
                 "fortune-mod cookie files (quotations, jokes, riddles)",
                 "BSD-style (fortune-mod; Regents of the University of California)"),
    "anarchism": ("fortune-anarchism",
                  "BLAG fortune assortment (quotations)",
                  "public domain"),
    "handwritten": ("(this repository)",
                    "a few dozen greeting and small-talk exchanges written for this model",
                    "same licence as this repository"),
}

# Licence texts whose conditions ask that the notice travel with copies and derived works: copied
# verbatim from the packages' copyright files into manifest.json, and from there into models/README.md.
NOTICE_FILES = {
    "wordnet": "/usr/share/doc/wordnet-base/copyright",
    "fortunes": "/usr/share/doc/fortunes/copyright",
    "austen": "/usr/share/doc/r-cran-janeaustenr/copyright",
}


def notice_text(source, path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if source == "wordnet":  # the licence paragraph of the upstream files, without Debian's packaging part
        m = re.search(r"License: WordNet3\.0\n(.*?)\n\nFiles: debian", text, flags=re.S)
        text = "\n".join(ln[1:] if ln.startswith(" ") else ln for ln in m.group(1).split("\n")).replace("\n.\n", "\n\n")
    elif source == "fortunes":
        m = re.search(r"This program falls under the BSD copyright:\n(.*?)(?:\n-{20,}|\Z)", text, flags=re.S)
        text = m.group(1)
    elif source == "austen":
        body = text[text.rindex("License: MIT"):].split("\n", 1)[1]
        text = "Copyright: 2016-2017 Julia Silge\n" + "\n".join(ln[1:] if ln.startswith(" ") else ln for ln in body.split("\n")).replace("\n.\n", "\n\n")
    return text.strip() + "\n"


SYSTEM_PROMPTS = [
    "You are a helpful assistant.",
    "You are a helpful assistant.",
    "You are a helpful assistant.",
    "You are a friendly assistant. Answer briefly.",
    "You are a small assistant that knows words, stories and quotations.",
]

# --------------------------------------------------------------------------- text cleaning

_TRANS = str.maketrans({
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"',
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u2032": "'",
    "\u2014": "--", "\u2013": "-", "\u2012": "-", "\u2010": "-", "\u2011": "-",
    "\u2026": "...", "\u00a0": " ", "\u2009": " ", "\u200a": " ", "\u2002": " ", "\u2003": " ",
    "\ufeff": None, "\u200b": None, "\r": None,
})


def clean(s):
    """NFC, ASCII quotes and dashes, no control characters, no trailing spaces."""
    s = unicodedata.normalize("NFC", s).translate(_TRANS)
    s = "".join(ch for ch in s if ch in "\n\t" or unicodedata.category(ch)[0] != "C")
    s = s.replace("\t", "    ")
    lines = [ln.rstrip() for ln in s.split("\n")]
    s = "\n".join(lines)
    s = re.sub(r"\n{3,}", "\n\n", s)
    return s.strip()


def unwrap(paragraph):
    """Join hard-wrapped lines of one paragraph into one line."""
    return re.sub(r"\s+", " ", paragraph).strip()


def letters_ratio(s):
    if not s:
        return 0.0
    return sum(ch.isalpha() or ch == " " for ch in s) / len(s)


def a_or_an(word):
    w = word.lower()
    if re.match(r"(eu|uni|use|usu|one|once)", w):
        return "a"
    if re.match(r"(hour|honest|honou?r|heir)", w):
        return "an"
    return "an" if w[:1] in "aeiou" else "a"


def cap(s):
    return s[:1].upper() + s[1:]


# --------------------------------------------------------------------------- sources

def read_austen(austen_dir):
    """One document per chapter, paragraphs unwrapped, italics markers removed."""
    books = ["sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey",
             "persuasion"]
    docs = []
    for b in books:
        path = os.path.join(austen_dir, b + ".txt")
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        chapters, cur, started = [], [], False
        for ln in lines:
            st = ln.strip()
            if re.fullmatch(r"(CHAPTER|Chapter)\s+[0-9IVXLC]+\.?", st):
                if cur:
                    chapters.append(cur)
                cur, started = [], True
                continue
            if re.fullmatch(r"(VOLUME|Volume)\s+[0-9IVXLC]+\.?", st) or re.fullmatch(r"(THE )?END\.?", st):
                continue
            if started:
                cur.append(ln)
        if cur:
            chapters.append(cur)
        if len(chapters) < 20:
            raise SystemExit(f"austen: {b}: only {len(chapters)} chapters found")
        for ch in chapters:
            text = "\n".join(ch).replace("_", "")
            paras = [unwrap(p) for p in re.split(r"\n\s*\n", text) if p.strip()]
            doc = clean("\n\n".join(paras))
            if len(doc) > 200:
                docs.append(doc)
    return docs


def read_web(imp_path):
    """World English Bible from `mod2imp engWEB2015eb`: one document per chapter."""
    with open(imp_path, encoding="utf-8") as f:
        data = f.read()
    entries = re.split(r"^\$\$\$", data, flags=re.M)
    chapters = {}
    order = []
    verses = []
    for e in entries:
        head, _, body = e.partition("\n")
        m = re.fullmatch(r"(.+?) (\d+):(\d+)", head.strip())
        if not m:
            continue
        book, chap, verse = m.group(1), int(m.group(2)), int(m.group(3))
        if chap == 0 or verse == 0:
            continue
        s = body
        s = re.sub(r"<note\b.*?</note>", " ", s, flags=re.S)
        s = re.sub(r"<title\b.*?</title>", " ", s, flags=re.S)
        s = re.sub(r'<div\b[^>]*type="x-p"[^>]*/>', "\n\n", s)
        s = re.sub(r"<[^>]+>", "", s)
        s = s.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
        key = (book, chap)
        if key not in chapters:
            chapters[key] = []
            order.append(key)
        chapters[key].append(s)
        verses.append((book, chap, verse, s))
    docs = []
    for key in order:
        text = " ".join(chapters[key])
        paras = [re.sub(r"\s+", " ", p).strip() for p in text.split("\n\n")]
        paras = [re.sub(r"\s+([,.;:!?])", r"\1", p) for p in paras if p]
        doc = clean("\n\n".join(paras))
        if len(doc) > 100:
            docs.append(doc)
    vs = []
    for book, chap, verse, s in verses:
        t = re.sub(r"\s+", " ", s).strip()
        t = clean(re.sub(r"\s+([,.;:!?])", r"\1", t))
        if 20 <= len(t) <= 400:
            vs.append((book, chap, verse, t))
    if len(docs) < 1000 or len(vs) < 20000:
        raise SystemExit(f"web_bible: only {len(docs)} chapters / {len(vs)} verses parsed")
    return docs, vs


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _b64num(s):
    v = 0
    for c in s:
        v = v * 64 + _B64.index(c)
    return v


def read_dictd(name):
    """(headword, entry text) pairs of a dictd database in /usr/share/dictd."""
    with gzip.open(f"/usr/share/dictd/{name}.dict.dz") as f:
        data = f.read()
    out = []
    with open(f"/usr/share/dictd/{name}.index", encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or parts[0].startswith("00database") or parts[0].startswith("00-database"):
                continue
            off, ln = _b64num(parts[1]), _b64num(parts[2])
            out.append((parts[0], data[off:off + ln].decode("utf-8", "replace")))
    return out


def read_devil():
    """The Devil's Dictionary entries: (word, cleaned entry text)."""
    out = []
    seen = set()
    for word, body in read_dictd("devil"):
        body = body.replace("_", "")
        body = clean(body)
        m = re.match(r"([A-Z][A-Z' .-]+),?\s+((?:[a-z]+\.\s*)+)?", body)
        if not m or len(body) < 40 or body in seen:
            continue
        seen.add(body)
        head = m.group(1).strip()
        # unwrap prose paragraphs, keep verse (indented lines) as it is
        paras = []
        for p in re.split(r"\n\s*\n", body):
            if re.search(r"^\s{4,}\S", p, flags=re.M):
                paras.append("\n".join(ln.strip() for ln in p.split("\n")))
            else:
                paras.append(unwrap(p))
        out.append((head.title() if head.isupper() else head, "\n\n".join(paras)))
    if len(out) < 800:
        raise SystemExit(f"devil: only {len(out)} entries")
    return out


def read_jargon():
    """Jargon File entries: (headword, definition text without the pronunciation line)."""
    out = []
    for word, body in read_dictd("jargon"):
        lines = body.split("\n")
        if len(lines) < 3:
            continue
        head = lines[0].strip()
        rest = "\n".join(lines[2:]) if lines[1].startswith(" ") else "\n".join(lines[1:])
        rest = rest.replace("{", "").replace("}", "")
        paras = [unwrap(p) for p in re.split(r"\n\s*\n", rest) if p.strip()]
        # skip entries that are mostly transcripts or code
        paras = [p for p in paras if letters_ratio(p) > 0.8]
        if not paras:
            continue
        text = clean("\n\n".join(paras))
        if 40 <= len(text) <= 4000:
            out.append((head, text))
    if len(out) < 1500:
        raise SystemExit(f"jargon: only {len(out)} entries")
    return out


FORTUNE_SKIP = {"ascii-art", "translate-me", "zippy", "knghtbrd", "perl", "linuxcookie", "debian"}


def read_fortunes(directory, names=None):
    """Fortune cookies: list of (file, text)."""
    out = []
    files = sorted(f for f in os.listdir(directory) if not f.endswith(".dat") and not f.endswith(".u8"))
    for name in files:
        if name in FORTUNE_SKIP or (names is not None and name not in names):
            continue
        path = os.path.join(directory, name)
        if os.path.exists(path + ".u8"):
            path = path + ".u8"
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            raw = f.read()
        for cookie in re.split(r"^%\s*$", raw, flags=re.M):
            lines = [ln.strip() for ln in cookie.strip("\n").split("\n")]
            body = [ln for ln in lines if not ln.startswith("--")]
            tail = [ln for ln in lines if ln.startswith("--")]
            if (len(body) >= 2 and len(tail) <= 1 and lines[: len(body)] == body
                    and all(len(ln) >= 50 for ln in body[:-1])):
                lines = [unwrap(" ".join(body))] + tail  # hard-wrapped prose
            text = clean("\n".join(lines))
            if not text or len(text) > 1200 or text.count("\n") > 20:
                continue
            if letters_ratio(text.replace("\n", " ")) < 0.75:
                continue
            out.append((name, text))
    return out


WN_POS = {"n": "noun", "v": "verb", "a": "adjective", "s": "adjective", "r": "adverb"}


def read_wordnet(directory):
    """WordNet synsets: dicts with words, pos, lexfile, definition, examples."""
    synsets = []
    for part in ("noun", "verb", "adj", "adv"):
        with open(os.path.join(directory, "data." + part), encoding="utf-8") as f:
            for line in f:
                if line.startswith("  "):
                    continue  # licence header
                head, sep, gloss = line.partition(" | ")
                if not sep:
                    continue
                fields = head.split()
                lexfile, pos, wcnt = int(fields[1]), fields[2], int(fields[3], 16)
                words = []
                for i in range(wcnt):
                    w = fields[4 + 2 * i]
                    w = re.sub(r"\((a|p|ip)\)$", "", w).replace("_", " ")
                    words.append(w)
                gloss = gloss.strip()
                examples = re.findall(r'"([^"]{8,})"', gloss)
                definition = re.split(r';\s*"', gloss)[0].strip().rstrip(";").strip()
                if not definition or len(definition) < 3:
                    continue
                synsets.append({"words": words, "pos": WN_POS[pos], "lexfile": lexfile,
                                "definition": clean(definition),
                                "examples": [clean(e) for e in examples]})
    if len(synsets) < 100000:
        raise SystemExit(f"wordnet: only {len(synsets)} synsets")
    return synsets


# --------------------------------------------------------------------------- conversations

def vary_question(rng, q):
    """Small surface variation of user questions: case and final punctuation."""
    r = rng.random()
    if r < 0.12:
        q = q[:1].lower() + q[1:]
    elif r < 0.18:
        q = q.rstrip("?.!")
    return q


def wordnet_pairs(rng, s):
    """Zero or more (question, answer) pairs about one synset."""
    words = [w for w in s["words"] if re.fullmatch(r"[A-Za-z][A-Za-z' .-]*", w)]
    if not words:
        return []
    w = words[0]
    d = s["definition"]
    pos = s["pos"]
    proper = w[:1].isupper()
    pairs = []
    if pos == "noun" and proper and s["lexfile"] == 18:  # noun.person
        art = "" if re.match(r"(a|an|the)\b", d) else a_or_an(d) + " "
        q = rng.choice([f"Who was {w}?", f"Who is {w}?", f"Tell me about {w}.", f"Who was {w}?"])
        pairs.append((q, f"{w} was {art}{d}."))
    elif pos == "noun" and proper:
        q = rng.choice([f"What is {w}?", f"Tell me about {w}.", f"What is {w}?"])
        art = "" if re.match(r"(a|an|the|any|one)\b", d) else "the " if s["lexfile"] == 15 and re.match(r"(capital|largest|state|city|country|river)", d) else ""
        pairs.append((q, f"{w} is {art}{d}."))
    else:
        kind = rng.random()
        ex = [e for e in s["examples"] if w.lower() in e.lower()]
        if kind < 0.45:
            q = rng.choice([f'What does "{w}" mean?', f"What does the word {w} mean?",
                            f"What is the meaning of {w}?", f"Define {w}.",
                            f'Can you explain what "{w}" means?', f"What does {w} mean?"])
            a = rng.choice([f'"{cap(w)}" is {a_or_an(pos)} {pos} that means {d}.',
                            f"As {a_or_an(pos)} {pos}, {w} means {d}.",
                            f'The word "{w}" means {d}.'])
            if ex and rng.random() < 0.7:
                a += f' For example: "{ex[0]}"'
            pairs.append((q, a))
        elif kind < 0.65 and pos == "noun" and re.match(r"(a|an|any|the)\b", d):
            q = f"What is {a_or_an(w)} {w}?"
            pairs.append((q, f"{cap(a_or_an(w))} {w} is {d}."))
        elif kind < 0.8 and len(words) > 1:
            others = [o for o in words[1:] if o.lower() != w.lower()]
            if others:
                q = rng.choice([f'What is another word for "{w}"?', f"Give me a synonym for {w}.",
                                f"What is a synonym of {w}?"])
                if len(others) == 1:
                    a = f'Another word for "{w}" is "{others[0]}". Both mean {d}.'
                else:
                    lst = ", ".join(f'"{o}"' for o in others[:-1]) + f' and "{others[-1]}"'
                    a = f"Words with the same meaning as \"{w}\" are {lst}. They mean {d}."
                pairs.append((q, a))
        elif ex:
            q = rng.choice([f'Can you use "{w}" in a sentence?', f"Give me an example sentence with {w}.",
                            f"Use the word {w} in a sentence."])
            sentence = cap(ex[0]) if ex[0].endswith((".", "!", "?")) else cap(ex[0]) + "."
            pairs.append((q, f'Sure. Here is an example: "{sentence}" Here "{w}" means {d}.'))
    return [(vary_question(rng, q), a) for q, a in pairs]


def conversation(rng, pairs, system_p=0.25):
    msgs = []
    if rng.random() < system_p:
        msgs.append({"role": "system", "content": rng.choice(SYSTEM_PROMPTS)})
    for q, a in pairs:
        msgs.append({"role": "user", "content": q})
        msgs.append({"role": "assistant", "content": a})
    return msgs


HANDWRITTEN = [
    (["Hello", "Hello!", "Hi", "Hi!", "Hey", "Hello there!", "Good morning!", "hi"],
     ["Hello! How can I help you today?", "Hi! What can I do for you?",
      "Hello! What would you like to talk about?"]),
    (["How are you?", "How are you today?", "How's it going?"],
     ["I'm doing well, thank you for asking. How can I help you?",
      "Very well, thank you! What can I do for you today?"]),
    (["Who are you?", "What are you?", "Introduce yourself.", "Tell me about yourself."],
     ["I am a small language model that comes with DS4Server. I was trained for a few minutes on "
      "public-domain books, a dictionary and a collection of quotations, so I can define words, "
      "tell a short story or share a quotation, but I know very little else.",
      "I'm the tiny default model of DS4Server: a small mixture-of-experts language model trained "
      "on English books, dictionary definitions and quotations."]),
    (["What is your name?", "What's your name?"],
     ["I am the tiny Flash-Next model that ships with DS4Server.",
      "My name is Tiny Flash-Next. I am the default model of DS4Server."]),
    (["What can you do?", "How can you help me?", "What do you know?"],
     ["I can explain the meaning of English words, give synonyms and example sentences, tell a "
      "short story in the style of an old novel, and share quotations and jokes. I am very small, "
      "so please check anything important.",
      "I know the meanings of many English words, some old stories and a lot of quotations. Ask "
      "me what a word means, or ask for a story or a quote."]),
    (["Thank you!", "Thanks!", "Thank you very much.", "thanks"],
     ["You're welcome!", "You're welcome! Is there anything else I can help with?",
      "Glad I could help."]),
    (["Goodbye!", "Bye!", "See you later."],
     ["Goodbye! Have a nice day.", "Bye! It was nice talking to you."]),
    (["Are you a human?", "Are you a person?"],
     ["No, I am a computer program: a small language model."]),
    (["Can you help me?", "I need help."],
     ["Of course. What do you need help with?", "Sure, I will try. What is the question?"]),
    (["Tell me something interesting.", "Say something."],
     ["Here is a thought from an old book: \"It is a truth universally acknowledged, that a single "
      "man in possession of a good fortune, must be in want of a wife.\" That is how Jane Austen "
      "begins Pride and Prejudice."]),
    (["What is DS4Server?", "What is ds4?"],
     ["DS4Server is a native C++ inference server for hybrid mixture-of-experts language models. "
      "I am the small model it uses when no other model is given."]),
    (["Do you like stories?", "Can you tell stories?"],
     ["Yes, I like stories very much. Ask me to tell you one!"]),
    (["What is the capital of France?"],
     ["The capital of France is Paris."]),
    (["What color is the sky?"],
     ["On a clear day the sky is blue."]),
    (["What day comes after Monday?"],
     ["Tuesday comes after Monday."]),
]


def handwritten_convs(rng, copies):
    convs = []
    for _ in range(copies):
        for qs, ans in HANDWRITTEN:
            convs.append(conversation(rng, [(rng.choice(qs), rng.choice(ans))], system_p=0.3))
    return convs


def first_sentence_split(paragraph):
    m = re.match(r"(.{30,300}?[.!?][\"']?)\s+(\S.*)", paragraph, flags=re.S)
    if not m:
        return None
    return m.group(1), m.group(2)


# --------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--austen-dir", required=True)
    ap.add_argument("--web-imp", required=True)
    ap.add_argument("--wordnet-dir", default="/usr/share/wordnet")
    ap.add_argument("--fortunes-dir", default="/usr/share/games/fortunes")
    ap.add_argument("--out", required=True)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--wordnet-convs", type=int, default=40000)
    args = ap.parse_args()
    rng = random.Random(SEED)
    records = []  # (src, record)

    def add_text(src, text):
        records.append({"src": src, "text": text})

    def add_chat(src, msgs):
        records.append({"src": src, "messages": msgs})

    # prose
    austen = read_austen(args.austen_dir)
    for d in austen:
        add_text("austen", d)
    web_docs, verses = read_web(args.web_imp)
    for d in web_docs:
        add_text("web_bible", d)
    devil = read_devil()
    for head, body in devil:
        add_text("devil", body)
    jargon = read_jargon()
    for head, body in jargon:
        add_text("jargon", f"{head}\n\n{body}")
    fortunes = read_fortunes(args.fortunes_dir)
    anarchism = [(n, t) for n, t in fortunes if n == "anarchism"]
    fortunes = [(n, t) for n, t in fortunes if n != "anarchism"]
    print(f"austen {len(austen)} chapters, web {len(web_docs)} chapters / {len(verses)} verses, "
          f"devil {len(devil)}, jargon {len(jargon)}, fortunes {len(fortunes)}, anarchism {len(anarchism)}",
          file=sys.stderr)

    # fortunes: half plain text (several cookies per document), half as chat answers
    for src, items in (("fortunes", fortunes), ("anarchism", anarchism)):
        items = items[:]
        rng.shuffle(items)
        plain, chat = items[: len(items) // 2], items[len(items) // 2:]
        for i in range(0, len(plain), 8):
            add_text(src, "\n\n".join(t for _, t in plain[i:i + 8]))
        for name, t in chat:
            if name == "riddles" and t.startswith("Q:"):
                m = re.match(r"Q:\s*(.+?)\nA:\s*(.+)", t, flags=re.S)
                if m:
                    add_chat(src + "_qa", conversation(rng, [(unwrap(m.group(1)), unwrap(m.group(2)))]))
                    continue
            if name in ("riddles", "humorists", "miscellaneous", "men-women", "pets", "food",
                        "sports", "kids", "work", "computers", "linux", "science", "medicine"):
                q = rng.choice(["Tell me a joke.", "Say something funny.", "Make me laugh.",
                                "Do you know a good joke?", "Tell me something funny."])
            elif name in ("wisdom", "platitudes", "tao", "education", "love", "people",
                          "literature", "anarchism", "politics", "law", "art", "songs-poems"):
                q = rng.choice(["Give me a quote.", "Tell me a quotation.", "Say something wise.",
                                "Share a famous quote.", "Can you give me a quote?",
                                "Tell me something wise."])
            else:
                q = rng.choice(["Tell me my fortune.", "Give me a fortune cookie.",
                                "Tell me something interesting.", "Say something."])
            add_chat(src + "_qa", conversation(rng, [(vary_question(rng, q), t)]))

    # Devil's Dictionary and Jargon File as definitions
    for head, body in devil:
        if len(body) > 1200:
            continue
        q = rng.choice([f"What is {head.lower()}, according to Ambrose Bierce?",
                        f"Give me a cynical definition of {head.lower()}.",
                        f"How does The Devil's Dictionary define {head.lower()}?"])
        add_chat("devil_qa", conversation(rng, [(q, body)]))
    for head, body in jargon:
        if len(body) > 1500:
            continue
        q = rng.choice([f'What does "{head}" mean in hacker jargon?', f"What is {head} in hacker slang?",
                        f"Explain the jargon term {head}."])
        add_chat("jargon_qa", conversation(rng, [(q, body)]))

    # WordNet: conversations of 1-3 questions about words
    synsets = read_wordnet(args.wordnet_dir)
    people_places = [s for s in synsets if s["pos"] == "noun" and s["words"][0][:1].isupper()
                     and s["lexfile"] in (15, 18)]
    common = [s for s in synsets if not (s["pos"] == "noun" and s["words"][0][:1].isupper())]
    rng.shuffle(common)
    pool = people_places + common
    pool = pool[: args.wordnet_convs * 2]
    rng.shuffle(pool)
    nconv, i = 0, 0
    while i < len(pool) and nconv < args.wordnet_convs:
        k = rng.choice([1, 1, 1, 2, 2, 3])
        pairs = []
        for s in pool[i:i + k]:
            pairs.extend(wordnet_pairs(rng, s))
        i += k
        if pairs:
            add_chat("wordnet_qa", conversation(rng, pairs))
            nconv += 1

    # Stories as chat answers: the opening of an Austen chapter, or a continuation
    for d in austen:
        paras = d.split("\n\n")
        if rng.random() < 0.5:
            q = rng.choice(["Tell me a story.", "Tell me a story, please.", "Can you tell me a story?",
                            "Write a short story.", "Tell me a story in the style of an old novel."])
            take = []
            for p in paras:
                take.append(p)
                if sum(len(t) for t in take) > 700:
                    break
            add_chat("austen_qa", conversation(rng, [(q, "\n\n".join(take))]))
        else:
            p = rng.choice(paras)
            sp = first_sentence_split(p)
            if sp:
                q = rng.choice(["Continue this story: ", "Continue the story: ", "What happens next? "]) + sp[0]
                add_chat("austen_qa", conversation(rng, [(q, sp[1])]))

    # Bible verses as questions
    for book, chap, verse, t in rng.sample(verses, 6000):
        q = rng.choice([f"What does {book} {chap}:{verse} say?", f"Quote {book} {chap}:{verse}.",
                        f"Recite {book} chapter {chap}, verse {verse}."])
        add_chat("web_bible_qa", conversation(rng, [(q, f"{book} {chap}:{verse} says: \"{t}\"")]))

    for m in handwritten_convs(rng, 20):
        add_chat("handwritten", m)

    # shuffle documents, write shards
    rng.shuffle(records)
    os.makedirs(args.out, exist_ok=True)
    for f in os.listdir(args.out):
        if f.startswith("corpus-") and f.endswith(".jsonl.gz"):
            os.remove(os.path.join(args.out, f))
    stats = {}
    shards = []
    for k in range(args.shards):
        part = records[k::args.shards]
        name = f"corpus-{k:02d}.jsonl.gz"
        path = os.path.join(args.out, name)
        payload = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in part).encode("utf-8")
        with open(path, "wb") as fh:
            with gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0, compresslevel=9) as gz:
                gz.write(payload)
        shards.append({"file": name, "records": len(part), "bytes_uncompressed": len(payload),
                       "bytes": os.path.getsize(path),
                       "sha256": hashlib.sha256(open(path, "rb").read()).hexdigest()})
    for r in records:
        st = stats.setdefault(r["src"], {"records": 0, "chars": 0})
        st["records"] += 1
        st["chars"] += len(r["text"]) if "text" in r else sum(len(m["content"]) for m in r["messages"])
    manifest = {
        "format": "gzip JSON lines; each record {src, text} (prose) or {src, messages} (a conversation "
                  "to render with the chat template)",
        "seed": SEED,
        "sources": {k: {"packages": v[0], "content": v[1], "licence": v[2]} for k, v in SOURCES.items()},
        "notices": {k: notice_text(k, p) for k, p in sorted(NOTICE_FILES.items())},
        "record_sources": {k: k[:-3] if k.endswith("_qa") else k for k in sorted(stats)},
        "stats": stats,
        "total_chars": sum(s["chars"] for s in stats.values()),
        "shards": shards,
    }
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    tot_c = sum(s["bytes"] for s in shards)
    tot_u = sum(s["bytes_uncompressed"] for s in shards)
    print(f"wrote {len(records)} records, {tot_u / 1e6:.1f} MB uncompressed, {tot_c / 1e6:.1f} MB in "
          f"{len(shards)} shards to {args.out}", file=sys.stderr)
    for k in sorted(stats):
        print(f"  {k:14s} {stats[k]['records']:7d} records {stats[k]['chars'] / 1e6:7.2f} M chars", file=sys.stderr)


if __name__ == "__main__":
    main()
