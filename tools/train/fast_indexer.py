"""A vectorised twin of transformers' Qwen4-Exp QSA indexer, for training only.

transformers' Qwen4ExpTextQSAIndexer.forward loops in Python over every batch element and every
query position: correct, and far too slow to train with. fast_forward computes the same mask for
the case training uses (no cache, a plain causal boolean mask, the sdpa path) with batched tensor
ops and falls back to the original for anything else. check() compares both on random inputs
before training starts.

The math (per batch element b and query position q, visible keys 0..q, compress ratio c, budget B):
- indexer queries: q_layernorm(index_qk_proj(x)[:heads*d]) per head, RoPE at the query position;
- raw keys: index_qk_proj(x)[heads*d:] (one key head); complete blocks are keys [j*c, (j+1)*c) for
  j < (q+1) // c; a block key is k_layernorm(mean of its raw keys (mean in float32, then cast back to
  the raw keys' dtype)) with RoPE at the block's first position;
- score(q, j) = sum over heads of relu(<query_h, block_key_j>) / sqrt(d) (float32);
- the top min(B // c, number of complete blocks) blocks by score are selected (torch.topk);
- the mask keeps the tokens of the selected blocks plus the tail (q+1) // c * c .. q, which is
  always visible; attention then uses causal_mask AND this mask.
"""
import math

import torch
from transformers.models.qwen4_exp.modeling_qwen4_exp import (
    Qwen4ExpTextQSAIndexer,
    Qwen4ExpTextRotaryEmbedding,
    apply_rotary_pos_emb,
)

ORIGINAL_FORWARD = Qwen4ExpTextQSAIndexer.forward
STATE = {"strict": False, "fast_calls": 0, "fallback_calls": 0}


def _scores(self, hidden_states, position_embeddings):
    """Block scores [B, T, nb] (float32) and the number of complete blocks per query [T]."""
    b, t, _ = hidden_states.shape
    d, c = self.index_head_dim, self.compress_ratio
    full_cos, full_sin = position_embeddings
    cur_cos, cur_sin = full_cos[:, -t:, :], full_sin[:, -t:, :]
    qk = self.index_qk_proj(hidden_states)
    q, token_k = torch.split(qk, [self.index_n_heads * d, self.index_kv_heads * d], dim=-1)
    q = q.reshape(b, t, -1, d)
    raw_keys = token_k.reshape(b, t, -1, d).squeeze(2)
    q = self.q_layernorm(q)
    q = apply_rotary_pos_emb(q, cos=cur_cos, sin=cur_sin, unsqueeze_dim=2)
    nb = t // c
    blocks = raw_keys[:, : nb * c].reshape(b, nb, c, d)
    pooled = blocks.float().mean(dim=2).to(raw_keys.dtype)
    pooled = self.k_layernorm(pooled)
    starts = torch.arange(nb, device=hidden_states.device) * c
    block_keys = apply_rotary_pos_emb(pooled.unsqueeze(2), cos=full_cos[:, starts], sin=full_sin[:, starts],
                                      unsqueeze_dim=2).squeeze(2)
    # float32 like the original's `.float()` matmul (which autocast would otherwise lower to bf16)
    with torch.autocast(device_type=hidden_states.device.type, enabled=False):
        scores = torch.einsum("bthd,bnd->btnh", q.float(), block_keys.float())
        scores = torch.relu(scores).sum(dim=-1) / math.sqrt(d)
    ncb = (torch.arange(t, device=hidden_states.device) + 1) // c
    return scores, ncb


def _fallback(self, why, *args):
    if STATE["strict"]:
        raise RuntimeError(f"fast QSA indexer: unsupported call during training ({why})")
    STATE["fallback_calls"] += 1
    return ORIGINAL_FORWARD(self, *args)


def fast_forward(self, hidden_states, position_embeddings, attention_mask, past_key_values):
    args = (hidden_states, position_embeddings, attention_mask, past_key_values)
    b, t, _ = hidden_states.shape
    if past_key_values is not None:
        return _fallback(self, "cache", *args)
    if attention_mask is None or attention_mask.dtype != torch.bool or tuple(attention_mask.shape[-2:]) != (t, t):
        return _fallback(self, "mask is not a [T, T] boolean mask", *args)
    dev = hidden_states.device
    causal = torch.ones(t, t, dtype=torch.bool, device=dev).tril()
    if not bool((attention_mask[:, 0] == causal).all()):
        return _fallback(self, "mask is not plain causal (padding?)", *args)
    STATE["fast_calls"] += 1
    c = self.compress_ratio
    with torch.no_grad():
        scores, ncb = _scores(self, hidden_states, position_embeddings)
        nb = scores.shape[-1]
        j = torch.arange(t, device=dev)
        tail = (j[None, :] >= (ncb * c)[:, None]) & (j[None, :] <= j[:, None])  # [T, T]
        if nb == 0:
            return tail[None, None].expand(b, 1, t, t).clone()
        valid = torch.arange(nb, device=dev)[None, :] < ncb[:, None]  # [T, nb]
        k = min(self.block_topk, nb)
        top = scores.masked_fill(~valid, float("-inf")).topk(k, dim=-1).indices  # [B, T, k]
        top_ok = torch.gather(valid.expand(b, t, nb), -1, top)
        chosen = torch.zeros(b, t, nb + 1, dtype=torch.bool, device=dev)
        chosen.scatter_(-1, torch.where(top_ok, top, nb), True)
        block_of = torch.where(j < nb * c, j // c, nb)  # tokens after the last complete block -> dummy
        in_chosen = chosen[:, :, block_of]  # [B, T, T]
        mask = in_chosen | tail[None]
    return mask.unsqueeze(1)


def install():
    Qwen4ExpTextQSAIndexer.forward = fast_forward


def uninstall():
    Qwen4ExpTextQSAIndexer.forward = ORIGINAL_FORWARD


def check(text_config, device, dtype, batch=2, seq=200, seed=1, log=print):
    """Compare fast_forward with the original on random inputs; mismatches must be score ties.

    Runs without autocast, with parameters and inputs in `dtype` (how inference runs the indexer:
    its score matmul is then a true float32 one in both implementations).
    """
    torch.manual_seed(seed)
    idx = Qwen4ExpTextQSAIndexer(text_config, layer_idx=3).to(device)
    with torch.no_grad():
        for p in idx.parameters():
            if p.ndim == 1:
                p.normal_(0.0, 0.3)
            else:
                p.normal_(0.0, 1.0 / math.sqrt(p.shape[-1]))
    idx = idx.to(dtype)
    rot = Qwen4ExpTextRotaryEmbedding(config=text_config).to(device)
    h = text_config.hidden_size
    x = torch.randn(batch, seq, h, device=device).to(dtype)
    pos = torch.arange(seq, device=device).view(1, 1, -1).expand(3, batch, -1)
    cos, sin = rot(x, pos)
    mask = torch.ones(seq, seq, dtype=torch.bool, device=device).tril()[None, None].expand(batch, 1, seq, seq)
    with torch.no_grad():
        ref = ORIGINAL_FORWARD(idx, x, (cos, sin), mask, None)
        fast = fast_forward(idx, x, (cos, sin), mask, None)
        scores, ncb = _scores(idx, x, (cos, sin))
    if ref.shape != fast.shape or ref.dtype != fast.dtype:
        raise RuntimeError(f"fast indexer: shape/dtype {tuple(fast.shape)} {fast.dtype} != {tuple(ref.shape)} {ref.dtype}")
    diff = (ref != fast).any(dim=-1)[:, 0]  # [B, T] queries whose selection differs
    k = idx.block_topk
    selecting = int((ncb > k).sum()) * batch
    unexplained = []
    for bi, qi in diff.nonzero().tolist():
        n = int(ncb[qi])
        if n <= k:
            unexplained.append((bi, qi, "no selection expected"))
            continue
        s = scores[bi, qi, :n].sort(descending=True).values
        gap = float(s[k - 1] - s[k])
        if gap > 1e-4 * max(1.0, abs(float(s[k - 1]))):
            unexplained.append((bi, qi, f"gap {gap:.3g}"))
    log(f"fast indexer check ({device.type}, {dtype}): {int(diff.sum())} of {batch * seq} queries differ "
        f"({selecting} queries really select), all explained by score ties: {not unexplained}")
    if unexplained:
        raise RuntimeError(f"fast QSA indexer differs from transformers' indexer: {unexplained[:5]}")
    if selecting == 0:
        raise RuntimeError("fast indexer check: the test sequence never exercises block selection")
    return int(diff.sum()), selecting
