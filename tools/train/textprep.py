"""Corpus loading and chat rendering for train.py (stdlib only, so it is testable without torch).

The chat renderer is the Python twin of chat_template.jinja for the conversations the corpus holds
(an optional leading system message, then user/assistant turns); test_textprep.py checks that both
produce the same text.
"""
import gzip
import hashlib
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))

# Qwen2/Qwen3 pre-tokenizer regex (Split, behaviour "Isolated", then ByteLevel without its own regex).
QWEN_PRETOKENIZE_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
    r"\s*[\r\n]+|\s+(?!\S)|\s+"
)

# Added tokens, in id order after the learned byte-level BPE vocabulary: (content, special).
# As in Qwen3's tokenizer.json, <think> and <tool_call> are added tokens that are not "special"
# (they survive decode(skip_special_tokens=True)).
ADDED_TOKENS = [
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<think>", False),
    ("</think>", False),
]
EOT = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
EMPTY_THINK = "<think>\n\n</think>\n\n"


def chat_template():
    with open(os.path.join(HERE, "chat_template.jinja"), encoding="utf-8") as f:
        return f.read()


def load_corpus(corpus_dir):
    """All records of the corpus shards, after checking them against manifest.json."""
    with open(os.path.join(corpus_dir, "manifest.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    records = []
    for shard in manifest["shards"]:
        path = os.path.join(corpus_dir, shard["file"])
        with open(path, "rb") as f:
            blob = f.read()
        digest = hashlib.sha256(blob).hexdigest()
        if digest != shard["sha256"]:
            raise SystemExit(f"corpus shard {path}: sha256 {digest} != manifest {shard['sha256']}")
        lines = gzip.decompress(blob).decode("utf-8").splitlines()
        if len(lines) != shard["records"]:
            raise SystemExit(f"corpus shard {path}: {len(lines)} records, manifest says {shard['records']}")
        for line in lines:
            rec = json.loads(line)
            rec["_val"] = is_validation(line)
            records.append(rec)
    return manifest, records


def is_validation(line):
    """About 1 % of the records, chosen by content hash (stable across runs and shard layouts)."""
    return int(hashlib.md5(line.encode("utf-8")).hexdigest()[:8], 16) % 100 == 0


def render_chat(messages, add_generation_prompt=False, empty_think=False):
    """Text of chat_template.jinja for system/user/assistant conversations without tools.

    empty_think=True prefixes the LAST assistant turn with "<think>\\n\\n</think>\\n\\n", which is
    what the template's generation prompt adds for enable_thinking=false: training on a share of
    such turns teaches the model to answer after an empty think block too.
    """
    out = []
    msgs = list(messages)
    if msgs and msgs[0]["role"] == "system":
        out.append(f"{IM_START}system\n{msgs[0]['content']}{IM_END}\n")
        msgs = msgs[1:]
    last_assistant = max((i for i, m in enumerate(msgs) if m["role"] == "assistant"), default=-1)
    for i, m in enumerate(msgs):
        if m["role"] in ("user", "system"):
            out.append(f"{IM_START}{m['role']}\n{m['content']}{IM_END}\n")
        elif m["role"] == "assistant":
            content = m["content"]
            if "</think>" in content:
                content = content.split("</think>")[-1].lstrip("\n")
            prefix = EMPTY_THINK if (empty_think and i == last_assistant) else ""
            out.append(f"{IM_START}assistant\n{prefix}{content}{IM_END}\n")
        else:
            raise ValueError(f"render_chat: unsupported role {m['role']!r}")
    if add_generation_prompt:
        out.append(f"{IM_START}assistant\n")
    return "".join(out)


def render_record(rec, rng, empty_think_share=0.1):
    if "text" in rec:
        return rec["text"]
    return render_chat(rec["messages"], empty_think=rng.random() < empty_think_share)


def strip_added_tokens(text):
    """Text for BPE training: the added tokens are not learned as merges."""
    for tok, _ in ADDED_TOKENS:
        text = text.replace(tok, "\n")
    return text


def render_all(records, seed=1234, upsample=None, empty_think_share=0.1):
    """(train_texts, val_texts, train_sources). Records of sources in `upsample` repeat that often."""
    rng = random.Random(seed)
    upsample = upsample or {}
    train, val, srcs = [], [], []
    for rec in records:
        text = render_record(rec, rng, empty_think_share)
        if rec["_val"]:
            val.append(text)
            continue
        for _ in range(upsample.get(rec["src"], 1)):
            train.append(text)
            srcs.append(rec["src"])
    order = list(range(len(train)))
    rng.shuffle(order)
    return [train[i] for i in order], val, [srcs[i] for i in order]
