#!/usr/bin/env python3
"""Tiny random qwen4_exp models and their transformers reference outputs (the engine's parity oracle).

Runs on the GPU machine (torch, transformers 5.17, numpy, safetensors), on its CPU in float32 with eager
attention.  For every variant it writes OUT/<variant>/: the checkpoint exactly as save_pretrained writes it
(some variants converted to bf16/f16 first, one sharded, one in the VL layout with extra mtp.* and vision
tensors), logits_<i>.npy (float32 [T, V], full forward of sequence i), and reference.json (sequences, greedy
continuation with per-step top-1/top-2 margins, seeded sampled streams under shared/SAMPLING.md).

Regenerate:  python3 tools/oracle/make_qwen4_fixtures.py --out tests/fixtures/qwen4
"""
import argparse
import json
import math
import os

import numpy as np
import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import Qwen4ExpConfig, Qwen4ExpForCausalLM, Qwen4ExpForConditionalGeneration, Qwen4ExpTextConfig

VARIANTS = {
    # text layout, float32, default layer pattern (3 GDN + 1 QSA), PLE on two layers, sigmoid output gate
    "text_f32": dict(
        layout="text", dtype="float32", seed=11, shard=None,
        text=dict(vocab_size=256, hidden_size=32, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                  head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
                  linear_value_head_dim=8, linear_conv_kernel_dim=4, num_experts=8, num_experts_per_tok=2,
                  moe_intermediate_size=16, shared_expert_intermediate_size=24, norm_topk_prob=True, hc_count=2,
                  hc_lowrank=8, ple_layer_ids=[1, 2], ngram_size=3, heads_per_ngram=2, ngram_vocab_size_base=101,
                  make_ngram_vocab_size_divisible_by=8, split_ngram_parts=2, ple_conv_kernel_size=3,
                  indexer_n_heads=2, indexer_kv_heads=1, indexer_head_dim=16, indexer_budget=8,
                  indexer_compress_ratio=4, output_gate_type="sigmoid", eos_token_id=1, tie_word_embeddings=False,
                  rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.5,
                                       mrope_section=[2, 1, 1]))),
    # VL layout (text under model.language_model.), bf16, silu output gate, norm_topk_prob off, 4 streams,
    # bigrams only, tied embeddings, eos as a list; mtp.* tensors added as real checkpoints carry them
    "vl_bf16": dict(
        layout="vl", dtype="bfloat16", seed=22, shard=None,
        text=dict(vocab_size=300, hidden_size=48, num_hidden_layers=4, num_attention_heads=6, num_key_value_heads=2,
                  head_dim=12, linear_num_key_heads=2, linear_num_value_heads=2, linear_key_head_dim=12,
                  linear_value_head_dim=16, linear_conv_kernel_dim=2, num_experts=6, num_experts_per_tok=3,
                  moe_intermediate_size=20, shared_expert_intermediate_size=16, norm_topk_prob=False, hc_count=4,
                  hc_lowrank=12, ple_layer_ids=[1], ngram_size=2, heads_per_ngram=3, ngram_vocab_size_base=53,
                  make_ngram_vocab_size_divisible_by=4, split_ngram_parts=3, ple_conv_kernel_size=2,
                  indexer_n_heads=3, indexer_kv_heads=1, indexer_head_dim=8, indexer_budget=12,
                  indexer_compress_ratio=6, output_gate_type="silu", eos_token_id=[2, 3], tie_word_embeddings=True,
                  layer_types=["linear_attention", "full_attention", "linear_attention", "full_attention"],
                  rope_parameters=dict(rope_type="default", rope_theta=1000000.0, partial_rotary_factor=0.5,
                                       mrope_section=[1, 1, 1]))),
    # text layout, f16, sharded with an index, 5 layers, trigram..4-gram PLE with its own embed dim
    "text_f16_sharded": dict(
        layout="text", dtype="float16", seed=33, shard="60KB",
        text=dict(vocab_size=320, hidden_size=64, num_hidden_layers=5, num_attention_heads=8, num_key_value_heads=1,
                  head_dim=16, linear_num_key_heads=2, linear_num_value_heads=6, linear_key_head_dim=16,
                  linear_value_head_dim=8, linear_conv_kernel_dim=4, num_experts=16, num_experts_per_tok=4,
                  moe_intermediate_size=12, shared_expert_intermediate_size=20, norm_topk_prob=True, hc_count=3,
                  hc_lowrank=16, ple_layer_ids=[4], ple_embed_dim=48, ngram_size=4, heads_per_ngram=2,
                  ngram_vocab_size_base=31, make_ngram_vocab_size_divisible_by=16, split_ngram_parts=4,
                  ple_conv_kernel_size=4, indexer_n_heads=4, indexer_kv_heads=1, indexer_head_dim=8,
                  indexer_budget=16, indexer_compress_ratio=8, output_gate_type="sigmoid", eos_token_id=5,
                  tie_word_embeddings=False,
                  layer_types=["linear_attention", "linear_attention", "full_attention", "linear_attention",
                               "full_attention"],
                  rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.25,
                                       mrope_section=[1, 1, 0]))),
}

SAMPLING_CASES = [
    dict(temperature=0.8, top_p=0.9, seed=1234),
    dict(temperature=1.0, top_k=20, min_p=0.05, seed=(1 << 40) + 7),
    dict(temperature=1.3, top_p=0.7, presence_penalty=0.5, frequency_penalty=0.3, seed=7),
    dict(temperature=0.6, top_k=5, top_p=0.95, seed=(1 << 63) + 11),
]


def sample_law(logits, rng, counts, temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, presence_penalty=0.0,
               frequency_penalty=0.0, seed=None):
    """The classic sampling law, written again from shared/SAMPLING.md (not imported)."""
    z = np.asarray(logits, dtype=np.float32).astype(np.float64)
    assert np.isfinite(z).all()
    for t, c in counts.items():
        z[t] -= presence_penalty * (c > 0) + frequency_penalty * c
    if temperature == 0.0 or top_k == 1:
        return int(np.argmax(z))
    z = z / temperature
    e = np.exp(z - z.max())
    total = 0.0
    for v in e:  # sequential sum in index order
        total += v
    p = e / total
    order = sorted(range(len(p)), key=lambda i: (-p[i], i))
    keep = len(p)
    if 0 < top_k < len(p):
        keep = min(keep, top_k)
    if top_p < 1.0:
        cum, n = 0.0, 0
        for i in order:
            cum += p[i]
            n += 1
            if cum >= top_p:
                break
        keep = min(keep, n)
    if min_p > 0.0:
        pmax = p[order[0]]
        keep = min(keep, max(1, sum(1 for i in order if p[i] >= min_p * pmax)))
    c, acc = [], 0.0
    for i in order[:keep]:
        acc += p[i]
        c.append(acc)
    u = rng.random()
    for j, cj in enumerate(c):
        if cj > u * c[-1]:
            return int(order[j])
    return int(order[keep - 1])


def perturb(model, gen):
    """Random weights at a scale that gives decisive logits; zero-initialised norms and convs get noise too."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not p.is_floating_point():
                continue
            if "norm" in name or name.endswith("dt_bias"):
                p.add_(torch.randn(p.shape, generator=gen) * 0.2)
            elif name.endswith("A_log"):
                p.copy_(torch.empty(p.shape).uniform_(0.1, 2.0, generator=gen).log())
            elif "conv1d" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.4)
            elif "embed" in name:
                p.copy_(torch.randn(p.shape, generator=gen))
            else:
                fan_in = p.shape[-1]
                p.copy_(torch.randn(p.shape, generator=gen) * (1.5 / math.sqrt(fan_in)))


def build(variant):
    text_cfg = dict(variant["text"])
    if variant["layout"] == "text":
        cfg = Qwen4ExpTextConfig(**text_cfg)
        model = Qwen4ExpForCausalLM(cfg)
    else:
        vision = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, out_hidden_size=text_cfg["hidden_size"],
                      patch_size=4, spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=16)
        cfg = Qwen4ExpConfig(text_config=text_cfg, vision_config=vision,
                             tie_word_embeddings=text_cfg.get("tie_word_embeddings", False),
                             image_token_id=290, video_token_id=291, vision_start_token_id=292,
                             vision_end_token_id=293)
        model = Qwen4ExpForConditionalGeneration(cfg)
    return model


def add_mtp_tensors(d, gen, hidden):
    """Real VL checkpoints also carry mtp.* weights that transformers ignores; the engine must say so."""
    path = os.path.join(d, "model.safetensors")
    tensors = load_file(path)
    dtype = next(t.dtype for k, t in tensors.items() if k.endswith("embed_tokens.weight"))
    tensors["mtp.fc.weight"] = (torch.randn((hidden, 2 * hidden), generator=gen) * 0.1).to(dtype)
    tensors["mtp.norm.weight"] = torch.zeros(hidden).to(dtype)
    save_file(tensors, path, metadata={"format": "pt"})


def forward_logits(model, ids):
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), use_cache=False)
    return out.logits[0].float().numpy()


def run_cached(model, prompt, steps, choose):
    """Prefill the prompt, then decode one token at a time through transformers' own cache."""
    with torch.no_grad():
        out = model(input_ids=torch.tensor([prompt]), use_cache=True)
        cache = out.past_key_values
        row = out.logits[0, -1].float().numpy()
        tokens, margins, rows = [], [], []
        for _ in range(steps):
            rows.append(row)
            top2 = np.sort(row)[-2:]
            margins.append(float(top2[1] - top2[0]))
            tok = choose(row)
            tokens.append(tok)
            out = model(input_ids=torch.tensor([[tok]]), past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            row = out.logits[0, -1].float().numpy()
    return tokens, margins, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    torch.set_num_threads(min(8, os.cpu_count() or 1))
    for name, variant in VARIANTS.items():
        if args.only and name != args.only:
            continue
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        torch.manual_seed(variant["seed"])
        gen = torch.Generator().manual_seed(variant["seed"])
        model = build(variant)
        perturb(model, gen)
        model = model.to(getattr(torch, variant["dtype"]))
        kw = {"max_shard_size": variant["shard"]} if variant["shard"] else {}
        model.save_pretrained(d, **kw)
        if variant["layout"] == "vl":
            add_mtp_tensors(d, gen, variant["text"]["hidden_size"])
        # The reference runs in float32 on the weights exactly as saved (bf16/f16 upcast exactly).
        cls = Qwen4ExpForCausalLM if variant["layout"] == "text" else Qwen4ExpForConditionalGeneration
        ref = cls.from_pretrained(d, dtype=torch.float32, attn_implementation="eager").eval()

        text = variant["text"]
        V = text["vocab_size"]
        eos = text["eos_token_id"][0] if isinstance(text["eos_token_id"], list) else text["eos_token_id"]
        rs = np.random.RandomState(variant["seed"])
        seqs = [rs.randint(0, V, size=40).tolist(), rs.randint(0, V, size=70).tolist(),
                rs.randint(0, V, size=100).tolist()]
        for pos in (9, 30, 31, 55):  # eos inside a sequence starts a new PLE n-gram segment
            seqs[1][pos] = eos
        record = {"transformers": transformers.__version__, "variant": name, "dtype": variant["dtype"],
                  "layout": variant["layout"], "sequences": seqs, "logits_files": []}
        for i, s in enumerate(seqs):
            logits = forward_logits(ref, s)
            np.save(os.path.join(d, f"logits_{i}.npy"), logits.astype(np.float32))
            record["logits_files"].append(f"logits_{i}.npy")
            # transformers' own cached path must agree with its full forward (sanity of the oracle itself)
            _, _, rows = run_cached(ref, s[:20], len(s) - 20, lambda row, it=iter(s[20:]): next(it))
            dev = np.abs(np.stack(rows) - logits[19:-1]).max() / np.abs(logits).max()
            print(f"{name} seq{i}: T={len(s)} max|logit|={np.abs(logits).max():.3f} cached-vs-full rel={dev:.2e}")
        prompt = seqs[0][:12]
        toks, margins, _ = run_cached(ref, prompt, 24, lambda row: int(np.argmax(row)))
        record["greedy"] = {"prompt": prompt, "tokens": toks, "margins": margins}
        record["sampled"] = []
        for case in SAMPLING_CASES:
            rng = np.random.default_rng(case["seed"])
            counts = {}

            def choose(row, case=case, rng=rng, counts=counts):
                t = sample_law(row, rng, counts, **case)
                counts[t] = counts.get(t, 0) + 1
                return t

            toks, _, _ = run_cached(ref, prompt, 16, choose)
            record["sampled"].append({"params": case, "prompt": prompt, "tokens": toks})
        with open(os.path.join(d, "reference.json"), "w") as f:
            json.dump(record, f, indent=1)
        print(name, "files:", sorted(os.listdir(d)))


if __name__ == "__main__":
    main()
