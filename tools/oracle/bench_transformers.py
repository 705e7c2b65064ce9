#!/usr/bin/env python3
"""transformers' own speed on a qwen4_exp shape: the reference figure `ds4 bench --reference` prints next
to ds4's. Runs on the GPU machine (torch, transformers 5.17), bf16 weights, sdpa attention, random
weights from transformers' own initialisation (speed does not depend on the values).

  python3 tools/oracle/bench_transformers.py --config bench/flash-next-shape.json --layers 8 \
      [--experts N] [--ple-vocab-base N] [--prefill 512] [--decode 32] [--device cuda]

The same shape overrides as `ds4 bench` (--layers, --experts, --ple-vocab-base) are applied the same way.
Prints one JSON line: {"prefill": [{"tokens", "seconds", "tokens_per_s"}], "decode": {...}, ...}.
"""
import argparse
import json
import time

import torch
from transformers import Qwen4ExpForCausalLM, Qwen4ExpTextConfig


def shrink(cfg, a):
    # Mirrors cmd_bench.cpp's shrink(): identical shapes on both sides.
    if a.layers:
        cfg["num_hidden_layers"] = a.layers
        if "layer_types" in cfg:
            cfg["layer_types"] = cfg["layer_types"][: a.layers]
        if "ple_layer_ids" in cfg:
            cfg["ple_layer_ids"] = [i for i in cfg["ple_layer_ids"] if i <= a.layers]
    if a.experts:
        cfg["num_experts"] = a.experts
    if a.ple_vocab_base:
        cfg["ngram_vocab_size_base"] = a.ple_vocab_base
    return {k: v for k, v in cfg.items() if not k.startswith("_") and k not in ("model_type", "architectures")}


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--layers", type=int, default=0)
    ap.add_argument("--experts", type=int, default=0)
    ap.add_argument("--ple-vocab-base", type=int, default=0)
    ap.add_argument("--prefill", default="512")
    ap.add_argument("--decode", type=int, default=32)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    cfg = Qwen4ExpTextConfig(**shrink(json.load(open(a.config)), a))
    torch.manual_seed(0)
    with torch.device(a.device):
        model = Qwen4ExpForCausalLM(cfg).to(torch.bfloat16).eval()
    model.config._attn_implementation = "sdpa"
    out = {"transformers_device": torch.cuda.get_device_name() if a.device.startswith("cuda") else "cpu",
           "params": sum(p.numel() for p in model.parameters()), "prefill": [], "decode": None}
    V = cfg.vocab_size
    for P in [int(x) for x in a.prefill.split(",")]:
        ids = (torch.arange(P, device=a.device) * 7919 + 13) % V  # the prompt ds4 bench uses
        with torch.no_grad():
            model(input_ids=ids[None, :8], use_cache=True)  # warm-up
            sync(a.device)
            t0 = time.perf_counter()
            res = model(input_ids=ids[None], use_cache=True)
            sync(a.device)
            dt = time.perf_counter() - t0
            out["prefill"].append({"tokens": P, "seconds": dt, "tokens_per_s": P / dt})
            cache, tok = res.past_key_values, res.logits[:, -1:].argmax(-1)
            # The first decode step untimed, as ds4 bench times its own (one-time work of the sequence).
            res = model(input_ids=tok, past_key_values=cache, use_cache=True)
            cache, tok = res.past_key_values, res.logits[:, -1:].argmax(-1)
            sync(a.device)
            t0 = time.perf_counter()
            for _ in range(a.decode):
                res = model(input_ids=tok, past_key_values=cache, use_cache=True)
                cache, tok = res.past_key_values, res.logits[:, -1:].argmax(-1)
            sync(a.device)
            dt = time.perf_counter() - t0
            out["decode"] = {"tokens": a.decode, "seconds": dt, "tokens_per_s": a.decode / dt}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
