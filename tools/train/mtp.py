"""The MTP (multi-token prediction) head of the default model, Qwen3-Next checkpoint convention.

docs/mtp.md is the specification; this module is its reference implementation, built from the
transformers Qwen3-Next blocks (a full-attention Qwen3NextDecoderLayer with a sparse MoE and the
sigmoid-gated shared expert; zero-centred (1 + w) RMSNorms).

    mtp(h, e) = norm( layer0( fc( [pre_fc_norm_embedding(e) ; pre_fc_norm_hidden(h)] ) ) )

h[t] is the main model's final hidden state at position t (the input of lm_head), e[t] the main
model's embed_tokens row of token x[t+1]; lm_head(mtp(h, e))[t] predicts token x[t+2].
"""
import math

import torch
from torch import nn
from transformers.models.qwen3_next.configuration_qwen3_next import Qwen3NextConfig
from transformers.models.qwen3_next.modeling_qwen3_next import (
    Qwen3NextDecoderLayer,
    Qwen3NextExperts,
    Qwen3NextRMSNorm,
    Qwen3NextRotaryEmbedding,
    Qwen3NextSparseMoeBlock,
)


def mtp_config(text_config, attn_implementation="sdpa", experts_implementation="eager"):
    """A Qwen3NextConfig mirroring the main model's attention and MoE shapes, one full-attention layer."""
    rope = dict(text_config.rope_parameters)
    prf = rope.get("partial_rotary_factor", 1.0)
    rope_next = {"rope_type": "default", "rope_theta": rope["rope_theta"], "partial_rotary_factor": prf}
    cfg = Qwen3NextConfig(
        vocab_size=text_config.vocab_size,
        hidden_size=text_config.hidden_size,
        num_hidden_layers=1,
        layer_types=["full_attention"],
        num_attention_heads=text_config.num_attention_heads,
        num_key_value_heads=text_config.num_key_value_heads,
        head_dim=text_config.head_dim,
        hidden_act=text_config.hidden_act,
        max_position_embeddings=text_config.max_position_embeddings,
        rms_norm_eps=text_config.rms_norm_eps,
        rope_parameters=rope_next,
        partial_rotary_factor=prf,
        attention_bias=text_config.attention_bias,
        attention_dropout=0.0,
        num_experts=text_config.num_experts,
        num_experts_per_tok=text_config.num_experts_per_tok,
        moe_intermediate_size=text_config.moe_intermediate_size,
        shared_expert_intermediate_size=text_config.shared_expert_intermediate_size,
        norm_topk_prob=text_config.norm_topk_prob,
        decoder_sparse_step=1,
        mlp_only_layers=[],
        initializer_range=text_config.initializer_range,
        attn_implementation=attn_implementation,
        experts_implementation=experts_implementation,
    )
    got = cfg.rope_parameters.get("partial_rotary_factor", getattr(cfg, "partial_rotary_factor", None))
    if got != prf:
        raise RuntimeError(f"MTP config: partial_rotary_factor {got} != main model's {prf}")
    return cfg


class MTPHead(nn.Module):
    """mtp.* of the checkpoint: fc, pre_fc_norm_embedding, pre_fc_norm_hidden, layers.0, norm."""

    def __init__(self, config: Qwen3NextConfig):
        super().__init__()
        h = config.hidden_size
        self.config = config
        self.fc = nn.Linear(2 * h, h, bias=False)
        self.pre_fc_norm_embedding = Qwen3NextRMSNorm(h, eps=config.rms_norm_eps)
        self.pre_fc_norm_hidden = Qwen3NextRMSNorm(h, eps=config.rms_norm_eps)
        self.layers = nn.ModuleList([Qwen3NextDecoderLayer(config, 0)])
        self.norm = Qwen3NextRMSNorm(h, eps=config.rms_norm_eps)
        self.rotary_emb = Qwen3NextRotaryEmbedding(config=config)
        self.init_weights()

    @torch.no_grad()
    def init_weights(self):
        """Same rules as transformers' Qwen3-Next _init_weights (the layer is built outside a PreTrainedModel)."""
        std = self.config.initializer_range
        for m in self.modules():
            if isinstance(m, nn.Linear):
                m.weight.normal_(0.0, std)
            elif isinstance(m, Qwen3NextRMSNorm):
                m.weight.zero_()
            elif isinstance(m, Qwen3NextExperts):
                m.gate_up_proj.normal_(0.0, std)
                m.down_proj.normal_(0.0, std)
            elif isinstance(m, Qwen3NextSparseMoeBlock):
                m.gate.weight.normal_(0.0, std)

    def rotary_dim(self):
        return 2 * self.rotary_emb.inv_freq.numel()

    def forward(self, hidden, next_embeds, position_ids=None, past_key_values=None):
        """hidden, next_embeds: [B, T, H]. Returns the normed MTP hidden state [B, T, H].

        Without a cache the layer attends causally over the T positions given; position_ids default
        to 0..T-1 (the positions of the tokens x[t] whose hidden state h[t] is used).
        """
        b, t, _ = hidden.shape
        x = torch.cat([self.pre_fc_norm_embedding(next_embeds), self.pre_fc_norm_hidden(hidden)], dim=-1)
        x = self.fc(x)
        past = past_key_values.get_seq_length() if past_key_values is not None else 0
        if position_ids is None:
            position_ids = (torch.arange(t, device=x.device) + past)[None].expand(b, t)
        cos, sin = self.rotary_emb(x, position_ids)
        mask = torch.ones(t, past + t, dtype=torch.bool, device=x.device).tril(past)[None, None].expand(b, 1, t, past + t)
        if self.config._attn_implementation == "eager":
            mask = torch.where(mask, 0.0, torch.finfo(x.dtype).min).to(x.dtype)
        x = self.layers[0](x, position_embeddings=(cos, sin), attention_mask=mask, position_ids=position_ids,
                           past_key_values=past_key_values)
        return self.norm(x)


# ------------------------------------------------------------------ checkpoint names

def export_state(mtp: MTPHead, per_expert: bool, dtype=torch.bfloat16):
    """mtp.* tensors in the checkpoint layout: per_expert=True writes the hub layout of the main
    layers (mlp.experts.E.{gate,up,down}_proj.weight), False the fused gate_up_proj/down_proj."""
    out = {}
    for name, t in mtp.state_dict().items():
        t = t.detach().to("cpu", dtype).contiguous()
        if per_expert and name.endswith("mlp.experts.gate_up_proj"):
            base = name[: -len("gate_up_proj")]
            inter = t.shape[1] // 2
            for e in range(t.shape[0]):
                out[f"mtp.{base}{e}.gate_proj.weight"] = t[e, :inter].contiguous()
                out[f"mtp.{base}{e}.up_proj.weight"] = t[e, inter:].contiguous()
        elif per_expert and name.endswith("mlp.experts.down_proj"):
            base = name[: -len("down_proj")]
            for e in range(t.shape[0]):
                out[f"mtp.{base}{e}.down_proj.weight"] = t[e].contiguous()
        else:
            out["mtp." + name] = t
    return out


def import_state(tensors, num_experts):
    """Inverse of export_state: a state_dict for MTPHead from mtp.* checkpoint tensors."""
    sd = {}
    experts = {}
    for k, v in tensors.items():
        if not k.startswith("mtp."):
            continue
        name = k[4:]
        parts = name.split(".")
        if ".mlp.experts." in name and parts[-1] == "weight" and parts[-3].isdigit():
            base = ".".join(parts[:-3])  # layers.0.mlp.experts
            experts.setdefault(base, {})[(int(parts[-3]), parts[-2])] = v
        else:
            sd[name] = v
    for base, d in experts.items():
        gate_up = [torch.cat([d[(e, "gate_proj")], d[(e, "up_proj")]], dim=0) for e in range(num_experts)]
        sd[base + ".gate_up_proj"] = torch.stack(gate_up)
        sd[base + ".down_proj"] = torch.stack([d[(e, "down_proj")] for e in range(num_experts)])
    return sd


def param_count(module):
    return sum(p.numel() for p in module.parameters())


def check_causal(mtp: MTPHead, device):
    """Self-test: output at position i must not change when inputs after i change."""
    torch.manual_seed(0)
    h = mtp.config.hidden_size
    with torch.no_grad():
        a = torch.randn(1, 12, h, device=device)
        e = torch.randn(1, 12, h, device=device)
        y1 = mtp(a, e)
        a2, e2 = a.clone(), e.clone()
        a2[:, 7:] += 1.0
        e2[:, 7:] -= 1.0
        y2 = mtp(a2, e2)
    d_before = (y1[:, :7] - y2[:, :7]).abs().max().item()
    d_after = (y1[:, 7:] - y2[:, 7:]).abs().max().item()
    if not (d_before < 1e-4 and d_after > 1e-3 and math.isfinite(d_after)):
        raise RuntimeError(f"MTP causality self-test failed: change before={d_before} after={d_after}")
    return d_before, d_after
