#!/usr/bin/env python3
"""Train, evaluate and export the default model of DS4Server (models/tiny-flash-next).

Runs on the GPU machine (one H200; torch 2.11, transformers 5.17, tokenizers 0.23) in one go, well
inside its 10-minute limit, through tools/train/run.sh:

 1. load the corpus (.gpu/corpus, built by build_corpus.sh), render conversations with the chat
    template, split off ~1 % of the records for validation;
 2. train a byte-level BPE tokenizer (Qwen pre-tokenizer regex, NFC, Qwen special tokens);
 3. build a Qwen4ExpForCausalLM (GDN + QSA layers, 4-stream hyper-connections, a PLE layer, MoE with a
    gated shared expert) and one MTP module (docs/mtp.md), check the vectorised QSA indexer used for
    training against transformers' own, train both jointly on a wall-clock budget (bf16 autocast,
    AdamW, warmup + cosine over the time budget);
 4. evaluate: validation loss of the main head and of the MTP head, the MTP head's top-1 agreement
    with the main model's greedy next-next token (teacher-forced on held-out text, and on the
    model's own greedy continuations);
 5. export BF16 safetensors with save_pretrained plus the mtp.* tensors, tokenizer files, chat
    template and generation config; reload with from_pretrained and check the logits; print greedy
    samples; pack everything into $OUT/tiny-flash-next.tar (with models/README.md), and write
    $OUT/metrics.json and $OUT/train.log.
"""
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")

import argparse  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tarfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

T0 = time.time()
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import textprep  # noqa: E402

MODEL_NAME = "tiny-flash-next"
LOG_FILE = None
METRICS = {"status": "started"}


def log(*parts):
    msg = f"[{time.time() - T0:7.1f}s] " + " ".join(str(p) for p in parts)
    print(msg, flush=True)
    if LOG_FILE is not None:
        LOG_FILE.write(msg + "\n")
        LOG_FILE.flush()


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", default=".gpu/corpus")
    ap.add_argument("--out", default=os.environ.get("OUT", "out"))
    ap.add_argument("--work", default="/tmp/ds4-train", help="scratch directory (not returned)")
    ap.add_argument("--seconds", type=float, default=380.0, help="training wall-clock budget")
    ap.add_argument("--deadline", type=float, default=470.0,
                    help="the whole script should end by this many seconds; training is shortened to fit")
    ap.add_argument("--reserve", type=float, default=70.0, help="seconds kept for evaluation and export")
    ap.add_argument("--experts-impl", default="eager", help="transformers experts backend used for training")
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--batch", type=int, default=192, help="sequences per step")
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--min-lr-ratio", type=float, default=0.1)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--mtp-weight", type=float, default=0.3)
    ap.add_argument("--mtp-distill", type=float, default=0.5,
                    help="share of the MTP loss that is KL to the main model's (detached) next-token distribution")
    ap.add_argument("--aux-coef", type=float, default=0.01, help="MoE load-balancing loss coefficient")
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--tok-sample-mb", type=float, default=8.0)
    ap.add_argument("--upsample", default="austen=2", help="src=N,... repeat the training records of a source")
    ap.add_argument("--val-windows", type=int, default=256)
    ap.add_argument("--seed", type=int, default=1234)
    return ap.parse_args()


# =============================================================================== tokenizer

def train_tokenizer(texts, vocab_size, sample_bytes, seed):
    from tokenizers import AddedToken, Regex, Tokenizer, models, normalizers, pre_tokenizers, trainers

    rng = random.Random(seed)
    order = list(range(len(texts)))
    rng.shuffle(order)
    sample, total = [], 0
    for i in order:
        t = textprep.strip_added_tokens(texts[i])
        sample.append(t)
        total += len(t.encode("utf-8"))
        if total >= sample_bytes:
            break
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(textprep.QWEN_PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    n_added = len(textprep.ADDED_TOKENS)
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - n_added, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    tok.train_from_iterator(sample, trainer=trainer, length=len(sample))
    learned = tok.get_vocab_size()
    # Qwen's tokenizer.json layout for everything but the learned model
    d = json.loads(tok.to_str())
    bl = {"add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    d["normalizer"] = {"type": "NFC"}
    d["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": textprep.QWEN_PRETOKENIZE_REGEX}, "behavior": "Isolated",
         "invert": False},
        dict(type="ByteLevel", **bl)]}
    d["post_processor"] = dict(type="ByteLevel", **bl)
    d["decoder"] = dict(type="ByteLevel", **bl)
    d["truncation"] = None
    d["padding"] = None
    m = d["model"]
    m.update({"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
              "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False})
    probes = ["Once upon a time, there was a caf\u00e9 -- \"naïve\" 12345 words!\n\n  indented\tline"]
    probes += [textprep.strip_added_tokens(t)[:2000] for t in sample[:200]]
    before = [e.ids for e in tok.encode_batch(probes)]
    tok = Tokenizer.from_str(json.dumps(d))
    if [e.ids for e in tok.encode_batch(probes)] != before:
        raise RuntimeError("tokenizer: rewriting tokenizer.json to Qwen's layout changed the encoding")
    for content, special in textprep.ADDED_TOKENS:
        at = AddedToken(content, single_word=False, lstrip=False, rstrip=False, normalized=False, special=special)
        if special:
            tok.add_special_tokens([at])
        else:
            tok.add_tokens([at])
    ids = [tok.token_to_id(c) for c, _ in textprep.ADDED_TOKENS]
    if ids != list(range(learned, learned + n_added)):
        raise RuntimeError(f"tokenizer: added token ids {ids}, expected {learned}..{learned + n_added - 1}")
    if tok.get_vocab_size() > vocab_size:
        raise RuntimeError(f"tokenizer: {tok.get_vocab_size()} tokens > vocab {vocab_size}")
    return tok, total, learned


def check_tokenizer(tok, texts):
    import unicodedata

    bad = 0
    for t in texts[:300]:
        ids = tok.encode(t).ids
        if tok.decode(ids, skip_special_tokens=False) != unicodedata.normalize("NFC", t):
            bad += 1
    if bad:
        raise RuntimeError(f"tokenizer: {bad} of {min(300, len(texts))} texts do not round-trip")
    chat = textprep.render_chat([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}])
    toks = tok.encode(chat).tokens
    for content, _ in textprep.ADDED_TOKENS[1:3]:
        if content not in toks:
            raise RuntimeError(f"tokenizer: {content} is not one token in {toks}")


def tokenizer_config(tok):
    added = {}
    for content, special in textprep.ADDED_TOKENS:
        added[str(tok.token_to_id(content))] = {"content": content, "lstrip": False, "normalized": False,
                                                "rstrip": False, "single_word": False, "special": special}
    return {
        "add_bos_token": False,
        "add_prefix_space": False,
        "added_tokens_decoder": added,
        "additional_special_tokens": [textprep.IM_START, textprep.IM_END],
        "bos_token": None,
        "chat_template": textprep.chat_template(),
        "clean_up_tokenization_spaces": False,
        "eos_token": textprep.IM_END,
        "errors": "replace",
        "model_max_length": 4096,
        "pad_token": textprep.EOT,
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }


# =============================================================================== model

def text_config_kwargs(vocab, eot_id):
    return dict(
        vocab_size=vocab,
        hidden_size=384,
        num_hidden_layers=8,
        layer_types=["linear_attention"] * 3 + ["qwen_sparse_attention"] + ["linear_attention"] * 3
        + ["qwen_sparse_attention"],
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=64,
        hidden_act="silu",
        output_gate_type="sigmoid",
        max_position_embeddings=4096,
        initializer_range=0.02,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
                         "mrope_section": [6, 5, 5], "mrope_interleaved": True},
        attention_bias=False,
        attention_dropout=0.0,
        linear_conv_kernel_dim=4,
        linear_key_head_dim=48,
        linear_value_head_dim=48,
        linear_num_key_heads=4,
        linear_num_value_heads=8,
        num_experts=8,
        num_experts_per_tok=2,
        moe_intermediate_size=96,
        shared_expert_intermediate_size=192,
        norm_topk_prob=True,
        router_aux_loss_coef=0.01,
        hc_count=4,
        hc_lowrank=32,
        ple_layer_ids=[2],
        ple_embed_dim=128,
        ple_conv_kernel_size=4,
        ngram_size=3,
        heads_per_ngram=2,
        ngram_vocab_size_base=4096,
        make_ngram_vocab_size_divisible_by=128,
        split_ngram_parts=4,
        seed=1234,
        indexer_n_heads=4,
        indexer_kv_heads=1,
        indexer_head_dim=64,
        indexer_budget=64,
        indexer_compress_ratio=4,
        eos_token_id=eot_id,
        use_cache=True,
    )


def build_config(vocab, eot_id, experts_impl="eager"):
    from transformers.models.qwen4_exp.configuration_qwen4_exp import Qwen4ExpTextConfig

    kw = text_config_kwargs(vocab, eot_id)
    try:
        cfg = Qwen4ExpTextConfig(**kw, mtp_num_hidden_layers=1, attn_implementation="sdpa",
                                 experts_implementation=experts_impl)
    except Exception as e:  # keep going without the informational key
        log(f"config: mtp_num_hidden_layers rejected ({e!r}); it is added to config.json at export")
        cfg = Qwen4ExpTextConfig(**kw, attn_implementation="sdpa", experts_implementation=experts_impl)
    return cfg


def param_counts(model, mtp, cfg):
    total = sum(p.numel() for p in model.parameters())
    mtp_n = sum(p.numel() for p in mtp.parameters())
    experts = sum(p.numel() for n, p in model.named_parameters() if ".mlp.experts." in n)
    mtp_experts = sum(p.numel() for n, p in mtp.named_parameters() if ".mlp.experts." in n)
    emb = model.model.embed_tokens.weight.numel()
    ngram = sum(p.numel() for n, p in model.named_parameters() if "ngram_embedding" in n)
    share = cfg.num_experts_per_tok / cfg.num_experts
    active = total - emb - ngram - experts + experts * share
    return {"main": total, "mtp": mtp_n, "total": total + mtp_n, "embedding": emb, "ple_ngram_table": ngram,
            "routed_experts": experts + mtp_experts,
            "active_per_token_main_excluding_embedding_tables": int(active),
            "active_per_token_mtp": int(mtp_n - mtp_experts + mtp_experts * share)}


# =============================================================================== data

def encode_stream(tok, texts, eot_id):
    import numpy as np

    encs = tok.encode_batch(texts)
    parts = []
    for e in encs:
        parts.append(np.asarray(e.ids, dtype=np.int32))
        parts.append(np.asarray([eot_id], dtype=np.int32))
    return np.concatenate(parts)


# =============================================================================== train / eval

def forward_all(model, mtp, inp, lab1, router=False):
    """Main logits, MTP logits (docs/mtp.md), model output; one window of tokens."""
    out = model.model(input_ids=inp, use_cache=False, output_router_logits=router)
    h = out.last_hidden_state
    logits = model.lm_head(h)
    mh = mtp(h, model.model.embed_tokens(lab1))
    mlogits = model.lm_head(mh)
    return out, logits, mlogits


def lr_at(step, frac, args, scale):
    warm = min(1.0, (step + 1) / args.warmup)
    cos = args.min_lr_ratio + (1 - args.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * min(1.0, frac)))
    return args.lr * scale * warm * cos


def make_optimizer(torch, model, mtp, args):
    decay, no_decay = [], []
    for mod in (model, mtp):
        for n, p in mod.named_parameters():
            if not p.requires_grad:
                continue
            if p.ndim >= 2 and "embed_tokens" not in n and "ngram_embedding" not in n:
                decay.append(p)
            else:
                no_decay.append(p)
    return torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=True)


def train(torch, F, model, mtp, cfg, train_ids, args, budget):
    from transformers.models.qwen4_exp.modeling_qwen4_exp import load_balancing_loss_func

    import fast_indexer

    dev = train_ids.device
    T, B = args.seq_len, args.batch
    V = cfg.vocab_size
    E, K = cfg.num_experts, cfg.num_experts_per_tok
    gen = torch.Generator(device=dev)
    gen.manual_seed(args.seed)
    ar = torch.arange(T + 2, device=dev)
    n_tok = train_ids.numel()
    params = [p for p in list(model.parameters()) + list(mtp.parameters()) if p.requires_grad]
    opt = make_optimizer(torch, model, mtp, args)
    mtp_router = {}
    hook = mtp.layers[0].mlp.gate.register_forward_hook(lambda m, i, o: mtp_router.__setitem__("logits", o[0]))

    def snapshot():
        return [p.detach().clone() for p in params]

    model.train()
    mtp.train()
    fast_indexer.STATE["strict"] = True
    snap, snap_t = snapshot(), time.time()
    lr_scale, restores = 1.0, 0
    step, tokens = 0, 0
    hist = []
    t_start = time.time()
    last_log_t, last_log_tokens = t_start, 0
    while True:
        elapsed = time.time() - t_start
        if elapsed >= budget:
            break
        lr = lr_at(step, elapsed / budget, args, lr_scale)
        for g in opt.param_groups:
            g["lr"] = lr
        starts = torch.randint(0, n_tok - (T + 2), (B,), device=dev, generator=gen)
        w = train_ids[starts[:, None] + ar[None]]
        inp, lab1, lab2 = w[:, :T], w[:, 1:T + 1], w[:, 2:T + 2]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out, logits, mlogits = forward_all(model, mtp, inp, lab1, router=True)
        logits = logits.float()
        mlogits = mlogits.float()
        ce_main = F.cross_entropy(logits.view(-1, V), lab1.reshape(-1))
        ce_mtp = F.cross_entropy(mlogits.view(-1, V), lab2.reshape(-1))
        teacher = F.log_softmax(logits[:, 1:].detach(), dim=-1)
        student = F.log_softmax(mlogits[:, :-1], dim=-1)
        kl = (teacher.exp() * (teacher - student)).sum(-1).mean()
        routers = tuple(out.router_logits or ())
        if len(routers) != cfg.num_hidden_layers:
            raise RuntimeError(f"expected {cfg.num_hidden_layers} router outputs, got {len(routers)}")
        aux = load_balancing_loss_func(routers, E, K, None)
        aux_mtp = load_balancing_loss_func((mtp_router["logits"],), E, K, None)
        loss = (ce_main + args.mtp_weight * ((1 - args.mtp_distill) * ce_mtp + args.mtp_distill * kl)
                + args.aux_coef * (aux + aux_mtp))
        loss.backward()
        gnorm = torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        step += 1
        tokens += B * T
        if step <= 3 or step % 25 == 0:
            vals = torch.stack([loss.detach(), ce_main.detach(), ce_mtp.detach(), kl.detach(),
                                aux.detach(), aux_mtp.detach(), gnorm.detach()]).float().tolist()
            if not all(math.isfinite(v) for v in vals):
                restores += 1
                if restores > 3:
                    raise RuntimeError(f"training diverged {restores} times: {vals}")
                with torch.no_grad():
                    for p, s in zip(params, snap):
                        p.copy_(s)
                lr_scale *= 0.5
                opt = make_optimizer(torch, model, mtp, args)
                log(f"step {step}: non-finite loss {vals}; restored the snapshot, LR scale {lr_scale}")
                continue
            now = time.time()
            tps = (tokens - last_log_tokens) / max(1e-6, now - last_log_t)
            last_log_t, last_log_tokens = now, tokens
            hist.append({"step": step, "t": round(now - t_start, 1), "loss": vals[0], "ce_main": vals[1],
                         "ce_mtp": vals[2], "kl_mtp": vals[3], "aux": vals[4], "aux_mtp": vals[5],
                         "grad_norm": vals[6], "lr": lr})
            log(f"step {step:5d} t {now - t_start:6.1f}s lr {lr:.2e} loss {vals[0]:.3f} main {vals[1]:.3f} "
                f"mtp {vals[2]:.3f} kl {vals[3]:.3f} aux {vals[4]:.3f}/{vals[5]:.3f} gnorm {vals[6]:.2f} "
                f"{tps / 1e3:.0f}k tok/s")
            if now - snap_t > 45:
                snap, snap_t = snapshot(), now
    torch.cuda.synchronize()
    hook.remove()
    fast_indexer.STATE["strict"] = False
    return {"steps": step, "tokens": tokens, "seconds": round(time.time() - t_start, 1), "restores": restores,
            "history": hist}


def evaluate(torch, F, model, mtp, windows, bs, autocast):
    model.eval()
    mtp.eval()
    V = model.config.vocab_size
    T = windows.shape[1] - 2
    sums = torch.zeros(7, dtype=torch.float64, device=windows.device)
    ctx = torch.autocast("cuda", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    with torch.no_grad():
        for i in range(0, windows.shape[0], bs):
            w = windows[i:i + bs]
            inp, lab1, lab2 = w[:, :T], w[:, 1:T + 1], w[:, 2:T + 2]
            with ctx:
                _, logits, mlogits = forward_all(model, mtp, inp, lab1)
            logits, mlogits = logits.float(), mlogits.float()
            g, d = logits.argmax(-1), mlogits.argmax(-1)
            sums += torch.stack([
                F.cross_entropy(logits.view(-1, V), lab1.reshape(-1), reduction="sum").double(),
                F.cross_entropy(mlogits.view(-1, V), lab2.reshape(-1), reduction="sum").double(),
                torch.tensor(float(lab1.numel()), device=w.device, dtype=torch.float64),
                (d[:, :-1] == g[:, 1:]).sum().double(),
                torch.tensor(float(d[:, :-1].numel()), device=w.device, dtype=torch.float64),
                (g == lab1).sum().double(),
                (d == lab2).sum().double(),
            ])
    s = sums.tolist()
    return {"val_loss_main": s[0] / s[2], "val_loss_mtp": s[1] / s[2], "val_tokens": int(s[2]),
            "mtp_top1_agreement": s[3] / s[4], "main_top1_accuracy": s[5] / s[2], "mtp_top1_accuracy": s[6] / s[2]}


def greedy_continue(torch, model, prompts, n_new, autocast):
    """Greedy continuation without a cache (full recompute; uses the fast indexer)."""
    seq = prompts
    ctx = torch.autocast("cuda", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    with torch.no_grad(), ctx:
        for _ in range(n_new):
            logits = model(input_ids=seq, use_cache=False, logits_to_keep=1).logits[:, -1]
            seq = torch.cat([seq, logits.argmax(-1, keepdim=True)], dim=1)
    return seq


def self_acceptance(torch, model, mtp, prompts, n_new, autocast):
    """MTP acceptance on the model's own greedy continuations (what greedy speculative decoding sees)."""
    P = prompts.shape[1]
    seq = greedy_continue(torch, model, prompts, n_new, autocast)
    ctx = torch.autocast("cuda", dtype=torch.bfloat16) if autocast else contextlib.nullcontext()
    with torch.no_grad(), ctx:
        _, logits, mlogits = forward_all(model, mtp, seq[:, :-1], seq[:, 1:])
    g, d = logits.argmax(-1), mlogits.argmax(-1)
    L = seq.shape[1]
    consistent = (g[:, P - 1:] == seq[:, P:]).float().mean().item()
    acc = (d[:, P - 1:L - 2] == g[:, P:L - 1]).float().mean().item()
    return {"mtp_greedy_self_acceptance": acc, "recompute_consistency": consistent,
            "sequences": int(seq.shape[0]), "prompt_tokens": P, "new_tokens": n_new}


# =============================================================================== export

def export(torch, model, mtp, tok, cfg, out_dir):
    from safetensors.torch import load_file, save_file

    import mtp as mtp_mod

    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    model.save_pretrained(out_dir)
    files = sorted(os.listdir(out_dir))
    log("save_pretrained wrote", files)
    index_path = os.path.join(out_dir, "model.safetensors.index.json")
    if os.path.exists(index_path):
        with open(index_path) as f:
            index = json.load(f)
        main_keys = set(index["weight_map"])
    else:
        index = None
        main_keys = set(load_file(os.path.join(out_dir, "model.safetensors")).keys())
    per_expert = any(re.fullmatch(r"model\.layers\.\d+\.mlp\.experts\.\d+\.gate_proj\.weight", k) for k in main_keys)
    if "lm_head.weight" not in main_keys:
        raise RuntimeError("export: lm_head.weight missing from the checkpoint")
    mtp_tensors = mtp_mod.export_state(mtp, per_expert, torch.bfloat16)
    if set(mtp_tensors) & main_keys:
        raise RuntimeError("export: mtp.* names clash with the main checkpoint")
    if index is None:
        path = os.path.join(out_dir, "model.safetensors")
        tensors = load_file(path)
        tensors.update(mtp_tensors)
        save_file(tensors, path, metadata={"format": "pt"})
    else:
        save_file(mtp_tensors, os.path.join(out_dir, "model-mtp.safetensors"), metadata={"format": "pt"})
        for k, v in mtp_tensors.items():
            index["weight_map"][k] = "model-mtp.safetensors"
        index.setdefault("metadata", {})["total_size"] = index.get("metadata", {}).get("total_size", 0) + sum(
            v.numel() * v.element_size() for v in mtp_tensors.values())
        with open(index_path, "w") as f:
            json.dump(index, f, indent=2, sort_keys=True)
    # config.json: bf16, MTP depth (Qwen3-Next convention)
    cpath = os.path.join(out_dir, "config.json")
    with open(cpath) as f:
        conf = json.load(f)
    conf["dtype"] = "bfloat16"
    conf["mtp_num_hidden_layers"] = 1
    with open(cpath, "w") as f:
        json.dump(conf, f, indent=2, sort_keys=True)
        f.write("\n")
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w") as f:
        json.dump(tokenizer_config(tok), f, indent=2, ensure_ascii=False)
        f.write("\n")
    eot, im_end = tok.token_to_id(textprep.EOT), tok.token_to_id(textprep.IM_END)
    import transformers

    gen = {"do_sample": True, "eos_token_id": [im_end, eot], "pad_token_id": eot, "temperature": 0.7,
           "top_k": 20, "top_p": 0.8, "transformers_version": transformers.__version__}
    with open(os.path.join(out_dir, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=2, sort_keys=True)
        f.write("\n")
    for n in os.listdir(out_dir):
        os.chmod(os.path.join(out_dir, n), 0o644)
    sizes = {n: os.path.getsize(os.path.join(out_dir, n)) for n in sorted(os.listdir(out_dir))}
    total = sum(sizes.values())
    log(f"exported {out_dir}: {total / 2**20:.1f} MiB", sizes)
    if total > 64 * 2**20:
        raise RuntimeError(f"export is {total / 2**20:.1f} MiB > 64 MiB")
    return {"files": sizes, "bytes": total, "per_expert_layout": per_expert, "mtp_tensors": len(mtp_tensors)}


def reload(torch, out_dir, mtp_cfg, num_experts):
    from safetensors.torch import load_file
    from transformers import Qwen4ExpForCausalLM

    import mtp as mtp_mod

    model = Qwen4ExpForCausalLM.from_pretrained(out_dir, dtype=torch.bfloat16, attn_implementation="sdpa",
                                                experts_implementation="eager").cuda().eval()
    tensors = {}
    for name in sorted(os.listdir(out_dir)):
        if name.endswith(".safetensors"):
            tensors.update({k: v for k, v in load_file(os.path.join(out_dir, name)).items() if k.startswith("mtp.")})
    mtp_cfg = mtp_mod.mtp_config(model.config, experts_implementation="eager")
    mtp = mtp_mod.MTPHead(mtp_cfg)
    mtp.load_state_dict(mtp_mod.import_state(tensors, num_experts), strict=True)
    mtp = to_bf16(torch, mtp.to("cuda")).eval()
    return model, mtp


def to_bf16(torch, module):
    """module.to(bfloat16), except the RoPE inverse-frequency buffers, which transformers keeps in
    float32 when it loads a BF16 checkpoint (casting them would move every rotary angle)."""
    keep = {}
    for name, m in module.named_modules():
        for b in ("inv_freq", "original_inv_freq"):
            if m._buffers.get(b) is not None:
                keep[(name, b)] = m._buffers[b].detach().clone()
    module.to(torch.bfloat16)
    for (name, b), t in keep.items():
        module.get_submodule(name)._buffers[b] = t
    return module


def readme(metrics, manifest, cfg):
    p = metrics["params"]
    ev = metrics["eval_exported_bf16"]
    tr = metrics["training"]
    rows = "\n".join(f"| `{k}` | {v['packages']} | {v['content']} | {v['licence']} |"
                     for k, v in sorted(manifest["sources"].items()))
    stats = manifest["stats"]
    by_src = {}
    for rs, src in manifest["record_sources"].items():
        by_src[src] = by_src.get(src, 0) + stats.get(rs, {}).get("chars", 0)
    mix = ", ".join(f"{k} {v / 1e6:.1f} M" for k, v in sorted(by_src.items(), key=lambda kv: -kv[1]))
    names = {"wordnet": "WordNet 3.0 (wordnet-base)", "fortunes": "fortune-mod cookie files (fortunes, fortunes-min)",
             "austen": "janeaustenr (r-cran-janeaustenr)"}
    notices = "\n\n".join(f"#### {names.get(k, k)}\n```\n{v.rstrip()}\n```"
                          for k, v in sorted(manifest.get("notices", {}).items()))
    samples = "\n".join(f"- `{s['prompt']!r}` -> {s['completion']!r}" for s in metrics.get("samples", [])[:4])
    return f"""# Models shipped with DS4Server

## tiny-flash-next (the default model)

`ds4 run`, `ds4 generate` and `ds4 serve` use `models/tiny-flash-next/` when no `--model` is given. It is
a small model of the Flash-Next family (transformers `qwen4_exp_text`, `Qwen4ExpForCausalLM`) with every
block of the family switched on, plus one MTP module for speculative decoding. It writes English that
looks like English; it knows little. It exists so that a first command shows the real thing, and so
that speculative decoding can be measured on real text.

Files: `config.json`, `model.safetensors` (BF16; the main model as `save_pretrained` writes it, plus the
`mtp.*` tensors, which transformers ignores on load), `tokenizer.json`, `tokenizer_config.json` (with the
chat template), `generation_config.json`.

### Architecture
| | |
|---|---|
| layers | {cfg.num_hidden_layers}: {', '.join('GDN' if t == 'linear_attention' else 'QSA' for t in cfg.layer_types)} |
| hidden size | {cfg.hidden_size}; vocabulary {cfg.vocab_size} (byte-level BPE) |
| QSA attention | {cfg.num_attention_heads} query heads, {cfg.num_key_value_heads} KV heads, head dim {cfg.head_dim}, gated output, RoPE on {int(cfg.head_dim * cfg.rope_parameters['partial_rotary_factor'])} dims (theta {cfg.rope_parameters['rope_theta']:g}); indexer {cfg.indexer_n_heads} heads x {cfg.indexer_head_dim}, blocks of {cfg.indexer_compress_ratio}, budget {cfg.indexer_budget} tokens |
| Gated DeltaNet | {cfg.linear_num_key_heads} key heads, {cfg.linear_num_value_heads} value heads, head dims {cfg.linear_key_head_dim}/{cfg.linear_value_head_dim}, conv kernel {cfg.linear_conv_kernel_dim}, {cfg.output_gate_type} output gate |
| hyper-connections | {cfg.hc_count} streams, low rank {cfg.hc_lowrank} |
| PLE | layer {cfg.ple_layer_ids} (1-indexed), {cfg.ngram_size - 1} n-gram orders x {cfg.heads_per_ngram} hashed heads, table base {cfg.ngram_vocab_size_base}, embed dim {cfg.ple_embed_dim}, stored in {cfg.split_ngram_parts} shards |
| MoE | {cfg.num_experts} experts, top-{cfg.num_experts_per_tok}, expert width {cfg.moe_intermediate_size}; sigmoid-gated shared expert of width {cfg.shared_expert_intermediate_size} |
| MTP | one full-attention MoE layer in the Qwen3-Next convention (`mtp.*`), predicts token t+2; see `docs/mtp.md` |

Parameters: {p['total']:,} in all ({p['main']:,} main model, {p['mtp']:,} MTP); about
{p['active_per_token_main_excluding_embedding_tables']:,} active per token in the main model besides the
embedding and PLE lookup tables.

### Training
- Corpus: {manifest['total_chars'] / 1e6:.1f} M characters built by `tools/train/build_corpus.sh` ({mix});
  about 1 % of the records (chosen by content hash) are held out for validation.
- Tokenizer: byte-level BPE trained with HF `tokenizers` on {metrics['tokenizer']['sample_bytes'] / 1e6:.1f} MB of the corpus
  (Qwen pre-tokenizer regex, NFC; `<|endoftext|>`, `<|im_start|>`, `<|im_end|>`, `<tool_call>`, `</tool_call>`,
  `<think>`, `</think>` as added tokens after the {metrics['tokenizer']['learned']} learned ones).
- {tr['steps']} steps of {metrics['args']['batch']} x {metrics['args']['seq_len']} tokens: {tr['tokens'] / 1e6:.1f} M tokens trained
  in {tr['seconds']:.0f} s on one {metrics['device']} (whole run including tokenizer, evaluation and
  export: {metrics['wall_seconds']:.0f} s), bf16 autocast, AdamW (peak LR {metrics['args']['lr']:g}, warmup, cosine over the time budget).
  The MTP head is trained jointly (loss weight {metrics['args']['mtp_weight']}: cross-entropy on token t+2 and KL to the
  main model's detached next-token distribution, half each). The QSA indexer's projections stay at their
  random initialisation: the selected-token mask passes no gradient.
- Reproduce: `tools/train/build_corpus.sh` on the development machine, then `tools/train/run.sh` on the GPU
  machine with `.gpu/corpus` carried (see `tools/train/README.md`).

### Results (held-out text, exported BF16 weights)
| | |
|---|---|
| validation loss, main head | {ev['val_loss_main']:.3f} nats/token (perplexity {math.exp(ev['val_loss_main']):.1f}) |
| validation loss, MTP head (token t+2) | {ev['val_loss_mtp']:.3f} nats/token |
| MTP top-1 agreement with the main model's greedy next-next token (teacher-forced) | {100 * ev['mtp_top1_agreement']:.1f} % |
| MTP acceptance on the model's own greedy continuations | {100 * metrics.get('self_acceptance', {}).get('mtp_greedy_self_acceptance', float('nan')):.1f} % |
| main head top-1 accuracy | {100 * ev['main_top1_accuracy']:.1f} % |

Greedy samples (transformers, exported weights):
{samples}

### Sources and licences
Every text comes from a Debian package; the corpus manifest (`.gpu/corpus/manifest.json`) lists the
same. The conversations are synthesised from these sources (definitions as questions and answers,
quotations and jokes as answers, story openings and continuations), plus a few greetings written for
this model.

| source | Debian package | content | licence |
|---|---|---|---|
{rows}

### Licence notices
The model's weights are derived from the texts above. The notices that these licences ask to keep with
copies and modifications follow verbatim.

{notices}
"""


# =============================================================================== main

def main():
    global LOG_FILE
    args = parse_args()
    os.makedirs(args.out, exist_ok=True)
    LOG_FILE = open(os.path.join(args.out, "train.log"), "w")
    metrics_path = os.path.join(args.out, "metrics.json")
    METRICS["args"] = vars(args)

    def save_metrics():
        METRICS["wall_seconds"] = round(time.time() - T0, 1)
        with open(metrics_path, "w") as f:
            json.dump(METRICS, f, indent=1, sort_keys=True, default=str)

    try:
        run(args, save_metrics)
        METRICS["status"] = "ok"
    except BaseException as e:
        METRICS["status"] = "failed"
        METRICS["error"] = repr(e)
        log("FAILED:", repr(e))
        log(traceback.format_exc())
        save_metrics()
        raise
    save_metrics()
    log(f"done in {time.time() - T0:.0f} s; outputs in {args.out}: {sorted(os.listdir(args.out))}")


def run(args, save_metrics):
    import numpy as np
    import torch
    import torch.nn.functional as F
    import tokenizers
    import transformers

    import fast_indexer
    import mtp as mtp_mod

    log(f"torch {torch.__version__}, transformers {transformers.__version__}, tokenizers {tokenizers.__version__}, "
        f"numpy {np.__version__}, python {sys.version.split()[0]}")
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device")
    dev = torch.device("cuda")
    METRICS["device"] = torch.cuda.get_device_name(0)
    log("device:", METRICS["device"])
    torch.manual_seed(args.seed)
    random.seed(args.seed)

    # ---------------------------------------------------------------- corpus
    manifest, records = textprep.load_corpus(args.corpus)
    upsample = {k: int(v) for k, v in (kv.split("=") for kv in args.upsample.split(",") if kv)}
    train_texts, val_texts, _ = textprep.render_all(records, seed=args.seed, upsample=upsample)
    log(f"corpus: {len(records)} records, {len(train_texts)} training documents "
        f"({sum(map(len, train_texts)) / 1e6:.1f} M chars, upsampled {upsample}), {len(val_texts)} validation")

    # ---------------------------------------------------------------- tokenizer
    tok, sample_bytes, learned = train_tokenizer(train_texts, args.vocab, int(args.tok_sample_mb * 1e6), args.seed)
    check_tokenizer(tok, val_texts)
    eot_id = tok.token_to_id(textprep.EOT)
    im_end_id = tok.token_to_id(textprep.IM_END)
    METRICS["tokenizer"] = {"vocab": tok.get_vocab_size(), "learned": learned, "sample_bytes": sample_bytes,
                            "added": {c: tok.token_to_id(c) for c, _ in textprep.ADDED_TOKENS}}
    log(f"tokenizer: {tok.get_vocab_size()} tokens ({learned} learned) from {sample_bytes / 1e6:.1f} MB",
        METRICS["tokenizer"]["added"])
    train_np = encode_stream(tok, train_texts, eot_id)
    val_np = encode_stream(tok, val_texts, eot_id)
    chars = sum(map(len, train_texts)) + len(train_texts)
    METRICS["data"] = {"train_tokens": int(train_np.size), "val_tokens": int(val_np.size),
                       "chars_per_token": chars / train_np.size}
    log(f"encoded: {train_np.size / 1e6:.2f} M training tokens, {val_np.size / 1e3:.0f} k validation tokens, "
        f"{chars / train_np.size:.2f} chars/token")
    train_ids = torch.from_numpy(train_np.astype(np.int64)).to(dev)
    T = args.seq_len
    nwin = min(args.val_windows, (val_np.size - 2) // T)
    val_windows = torch.from_numpy(np.stack([val_np[i * T:i * T + T + 2] for i in range(nwin)]).astype(np.int64)).to(dev)
    save_metrics()

    # ---------------------------------------------------------------- model
    from transformers import Qwen4ExpForCausalLM

    cfg = build_config(args.vocab, eot_id, args.experts_impl)
    model = Qwen4ExpForCausalLM(cfg).to(dev)
    mcfg = mtp_mod.mtp_config(cfg, experts_implementation=args.experts_impl)
    mtp = mtp_mod.MTPHead(mcfg).to(dev)
    rot = int(cfg.head_dim * cfg.rope_parameters["partial_rotary_factor"])
    if 2 * model.model.rotary_emb.inv_freq.numel() != rot or mtp.rotary_dim() != rot:
        raise RuntimeError(f"rotary dims: main {2 * model.model.rotary_emb.inv_freq.numel()}, "
                           f"MTP {mtp.rotary_dim()}, expected {rot}")
    if model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr():
        raise RuntimeError("lm_head is tied to embed_tokens; tie_word_embeddings must be False")
    log(f"attn {model.config._attn_implementation}, experts {model.config._experts_implementation}; "
        f"MTP attn {mcfg._attn_implementation}, experts {mcfg._experts_implementation}")
    METRICS["params"] = param_counts(model, mtp, cfg)
    log("parameters:", METRICS["params"])
    if METRICS["params"]["total"] * 2 > 60 * 2**20:
        raise RuntimeError(f"model too large for the 64 MB export: {METRICS['params']['total']:,} parameters")
    mtp_mod.check_causal(mtp, dev)
    fast_indexer.check(cfg, torch.device("cpu"), torch.float32, log=log)
    fast_indexer.check(cfg, dev, torch.bfloat16, batch=2, seq=256, log=log)
    fast_indexer.install()
    save_metrics()

    # ---------------------------------------------------------------- train
    budget = min(args.seconds, args.deadline - (time.time() - T0) - args.reserve)
    if budget < 10:
        raise RuntimeError(f"no time left to train (budget {budget:.0f} s)")
    log(f"training for {budget:.0f} s: batch {args.batch} x {T} tokens, peak LR {args.lr}")
    tr = train(torch, F, model, mtp, cfg, train_ids, args, budget)
    METRICS["training"] = {k: v for k, v in tr.items()}
    log(f"trained {tr['steps']} steps, {tr['tokens'] / 1e6:.1f} M tokens in {tr['seconds']} s "
        f"({tr['tokens'] / max(1, tr['seconds']) / 1e3:.0f}k tok/s); indexer calls {fast_indexer.STATE}")
    save_metrics()

    # ---------------------------------------------------------------- evaluate (training precision)
    ev = evaluate(torch, F, model, mtp, val_windows, 64, autocast=True)
    METRICS["eval_training_precision"] = ev
    log("eval (fp32 weights, bf16 autocast):", json.dumps({k: round(v, 4) for k, v in ev.items()}))
    save_metrics()

    # ---------------------------------------------------------------- export
    work = args.work
    out_dir = os.path.join(work, MODEL_NAME)
    os.makedirs(work, exist_ok=True)
    model = to_bf16(torch, model).eval()
    mtp = to_bf16(torch, mtp).eval()
    METRICS["export"] = export(torch, model, mtp, tok, cfg, out_dir)
    save_metrics()

    # reload and compare with the in-memory BF16 model
    model_r, mtp_r = reload(torch, out_dir, mcfg, cfg.num_experts)
    log("reloaded: rotary inv_freq dtype", model_r.model.rotary_emb.inv_freq.dtype,
        "params", next(model_r.parameters()).dtype)
    with torch.no_grad():
        w = val_windows[:4]
        _, l_mem, m_mem = forward_all(model, mtp, w[:, :T], w[:, 1:T + 1])
        _, l_re, m_re = forward_all(model_r, mtp_r, w[:, :T], w[:, 1:T + 1])
    reload_diff = {"main_max_abs": (l_mem.float() - l_re.float()).abs().max().item(),
                   "mtp_max_abs": (m_mem.float() - m_re.float()).abs().max().item(),
                   "logit_absmax": l_mem.float().abs().max().item()}
    METRICS["reload_check"] = reload_diff
    log("reload check (in-memory BF16 vs from_pretrained):", reload_diff)
    if not (reload_diff["main_max_abs"] <= 1e-2 and reload_diff["mtp_max_abs"] <= 1e-2):
        raise RuntimeError(f"reloaded checkpoint does not reproduce the trained logits: {reload_diff}")
    del model, mtp
    torch.cuda.empty_cache()

    ev_r = evaluate(torch, F, model_r, mtp_r, val_windows, 64, autocast=False)
    METRICS["eval_exported_bf16"] = ev_r
    log("eval (exported BF16):", json.dumps({k: round(v, 4) for k, v in ev_r.items()}))
    save_metrics()

    # fast vs original indexer on the exported model (the original is the reference)
    try:
        w = val_windows[:2]
        with torch.no_grad():
            fast_logits = model_r(input_ids=w[:, :T], use_cache=False).logits.float()
            fast_indexer.uninstall()
            ref_logits = model_r(input_ids=w[:, :T], use_cache=False).logits.float()
            fast_indexer.install()
        METRICS["indexer_parity_exported"] = {"max_abs": (fast_logits - ref_logits).abs().max().item()}
        log("fast vs transformers indexer on the exported model, logits max abs diff:",
            METRICS["indexer_parity_exported"]["max_abs"])
    except Exception as e:
        fast_indexer.install()
        log("indexer parity check failed to run:", repr(e))

    # acceptance on the model's own greedy continuations
    try:
        P = 32
        prompts = val_windows[:64, :P]
        METRICS["self_acceptance"] = self_acceptance(torch, model_r, mtp_r, prompts, 96, autocast=False)
        log("MTP on greedy continuations:", METRICS["self_acceptance"])
    except Exception as e:
        log("self-acceptance failed:", repr(e), traceback.format_exc())
    save_metrics()

    # ---------------------------------------------------------------- samples (transformers' own code path)
    fast_indexer.uninstall()
    samples = []
    prompts = [
        ("raw", "Once upon a time"),
        ("raw", "It was a dark and stormy night"),
        ("chat", textprep.render_chat([{"role": "user", "content": "Hello!"}], add_generation_prompt=True)),
        ("chat", textprep.render_chat([{"role": "user", "content": "What does \"happy\" mean?"}],
                                      add_generation_prompt=True)),
        ("chat", textprep.render_chat([{"role": "user", "content": "Tell me a story."}], add_generation_prompt=True)),
        ("chat", textprep.render_chat([{"role": "user", "content": "Who was Mark Twain?"}], add_generation_prompt=True)),
    ]
    for kind, prompt in prompts:
        ids = tok.encode(prompt).ids
        x = torch.tensor([ids], device=dev)
        try:
            with torch.no_grad():
                y = model_r.generate(input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=64,
                                     do_sample=False, eos_token_id=[im_end_id, eot_id], pad_token_id=eot_id)
            how = "generate"
        except Exception as e:
            log("generate() failed, greedy loop without cache instead:", repr(e))
            fast_indexer.install()
            y = greedy_continue(torch, model_r, x, 64, autocast=False)
            fast_indexer.uninstall()
            how = "greedy-recompute"
        new = y[0, len(ids):].tolist()
        text = tok.decode(new, skip_special_tokens=False)
        samples.append({"kind": kind, "prompt": prompt, "prompt_ids": ids, "completion": text,
                        "completion_ids": new, "how": how})
        log(f"--- sample ({kind}, {how}) {prompt!r}\n{text}")
    METRICS["samples"] = samples
    save_metrics()

    # transformers' AutoTokenizer on the exported files (informational)
    try:
        from transformers import AutoTokenizer

        at = AutoTokenizer.from_pretrained(out_dir)
        probe = "Hello, world! Once upon a time... <|im_start|>user\nHi<|im_end|>\n"
        same = at(probe, add_special_tokens=False)["input_ids"] == tok.encode(probe).ids
        chat = [{"role": "user", "content": "Hi"}]
        tmpl = at.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        METRICS["autotokenizer"] = {"class": type(at).__name__, "ids_match": same,
                                    "template_match": tmpl == textprep.render_chat(chat, add_generation_prompt=True)}
        log("AutoTokenizer:", METRICS["autotokenizer"])
    except Exception as e:
        METRICS["autotokenizer"] = {"error": repr(e)}
        log("AutoTokenizer check failed:", repr(e))

    # ---------------------------------------------------------------- pack
    METRICS["wall_seconds"] = round(time.time() - T0, 1)
    with open(os.path.join(work, "README.md"), "w") as f:
        f.write(readme(METRICS, manifest, cfg))
    METRICS["package"] = pack(work, out_dir, args.out)
    log("packed:", METRICS["package"])


PART_BYTES = 15 * 2**20


def pack(work, out_dir, out):
    """models/README.md + the model directory as a .tar.gz, split into parts of at most 15 MiB
    (files coming back from the GPU machine are limited to 16 MiB each). Reassemble with
    `cat tiny-flash-next.tar.gz.part* > tiny-flash-next.tar.gz`."""
    import hashlib

    tgz = os.path.join(work, MODEL_NAME + ".tar.gz")
    with tarfile.open(tgz, "w:gz", compresslevel=6) as tf:
        tf.add(os.path.join(work, "README.md"), arcname="README.md")
        tf.add(out_dir, arcname=MODEL_NAME)
    with open(tgz, "rb") as f:
        blob = f.read()
    for name in os.listdir(out):
        if name.startswith(MODEL_NAME + ".tar"):
            os.remove(os.path.join(out, name))
    parts = []
    for i in range(0, len(blob), PART_BYTES):
        name = f"{MODEL_NAME}.tar.gz.part{i // PART_BYTES}"
        with open(os.path.join(out, name), "wb") as f:
            f.write(blob[i:i + PART_BYTES])
        parts.append(name)
    if len(parts) > 5:
        raise RuntimeError(f"package needs {len(parts)} parts; at most 8 files come back")
    return {"parts": parts, "bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}


if __name__ == "__main__":
    main()
