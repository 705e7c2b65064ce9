#!/usr/bin/env python3
"""transformers' float32 reference for the shipped default model (models/tiny-flash-next): main logits at
every position of a few tokenized texts, the MTP head's logits (docs/mtp.md, tools/train/mtp.py's MTPHead,
full-prefix form), and the greedy continuation with its margins. Runs on the GPU machine's CPU
(torch, transformers 5.17, safetensors), eager attention, float32 compute on the BF16 weights.

  python3 tools/oracle/make_default_model_reference.py --out tests/fixtures/default_model

Writes OUT/reference.json (token ids, greedy tokens and margins) and OUT/{logits,mtp_logits}_<i>.npy. Only the
last KEEP_ROWS rows of each logits matrix are kept (the fixture is committed; 8192 floats a row), and
reference.json's "logit_rows_from" / "mtp_rows_from" say which row each file starts at.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer
from transformers import Qwen4ExpForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "train"))
import mtp as M  # noqa: E402

TEXTS = [
    "Once upon a time",
    "<|im_start|>user\nWhat does \"happy\" mean?<|im_end|>\n<|im_start|>assistant\n",
    # long enough (> 67 tokens) that the QSA indexer (budget 64, blocks of 4) really drops blocks
    "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want "
    "of a wife. However little known the feelings or views of such a man may be on his first entering a "
    "neighbourhood, this truth is so well fixed in the minds of the surrounding families, that he is considered "
    "the rightful property of some one or other of their daughters.",
]
KEEP_ROWS = 8


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "tiny-flash-next"))
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.set_num_threads(min(8, os.cpu_count() or 1))
    model = Qwen4ExpForCausalLM.from_pretrained(a.model, dtype=torch.float32, attn_implementation="eager",
                                                experts_implementation="eager").eval()
    head = M.MTPHead(M.mtp_config(model.config, attn_implementation="eager")).float().eval()
    head.load_state_dict(M.import_state(load_file(os.path.join(a.model, "model.safetensors")),
                                        model.config.num_experts))
    tok = Tokenizer.from_file(os.path.join(a.model, "tokenizer.json"))
    record = {"model": "models/tiny-flash-next", "sequences": [], "logit_rows_from": [], "mtp_rows_from": [],
              "greedy": []}
    for i, text in enumerate(TEXTS):
        ids = tok.encode(text, add_special_tokens=False).ids
        x = torch.tensor([ids])
        with torch.no_grad():
            out = model.model(input_ids=x, use_cache=False)
            h = out.last_hidden_state
            logits = model.lm_head(h)[0].numpy()
            # MTP row s takes (h_s, x_{s+1}) and predicts x_{s+2}: rows 0 .. n-2.
            m = head(h[:, :-1], model.model.embed_tokens(x[:, 1:]))
            mtp_logits = model.lm_head(m)[0].numpy()
        lo, mlo = max(0, len(logits) - KEEP_ROWS), max(0, len(mtp_logits) - KEEP_ROWS)
        np.save(os.path.join(a.out, f"logits_{i}.npy"), np.ascontiguousarray(logits[lo:], dtype=np.float32))
        np.save(os.path.join(a.out, f"mtp_logits_{i}.npy"), np.ascontiguousarray(mtp_logits[mlo:], dtype=np.float32))
        record["sequences"].append(ids)
        record["logit_rows_from"].append(lo)
        record["mtp_rows_from"].append(mlo)
        # Greedy continuation through transformers' cache, with the top-1/top-2 margin of every step.
        with torch.no_grad():
            res = model(input_ids=x, use_cache=True)
            cache, row = res.past_key_values, res.logits[0, -1]
            toks, margins = [], []
            for _ in range(24):
                top2 = torch.topk(row, 2).values
                margins.append(float(top2[0] - top2[1]))
                t = int(row.argmax())
                toks.append(t)
                res = model(input_ids=torch.tensor([[t]]), past_key_values=cache, use_cache=True)
                cache, row = res.past_key_values, res.logits[0, -1]
        record["greedy"].append({"prompt": ids, "tokens": toks, "margins": margins})
        print(f"text {i}: {len(ids)} tokens, max|logit| {np.abs(logits).max():.2f}, greedy {toks[:8]}...")
    with open(os.path.join(a.out, "reference.json"), "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
