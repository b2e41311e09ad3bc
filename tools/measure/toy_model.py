"""A few-kilobyte stand-in for a Hugging Face causal LM, for running measure_dist.py's orchestration on CPU ranks.

It has the module names and call conventions the harness's parallel plans rely on (model.model.embed_tokens, .layers[i]
.self_attn.{q,k,v,o}_proj called with hidden_states=..., .mlp.{gate,up,down}_proj, .input_layernorm,
.post_attention_layernorm, .norm, .rotary_emb(x, position_ids), model.lm_head; for MoE a block with .gate returning
(logits, top-k weights, top-k indices) and .experts holding fused gate_up_proj [E, 2I, H] and down_proj [E, H, I] called
as experts(hidden, top_k_index, top_k_weights), as transformers 5 lays them out), in plain PyTorch that runs on the
torch 1.13 Debian ships. Its memory says nothing about a real model's: it is never a calibration case.
"""
import json
import types

import torch
import torch.nn.functional as F
from torch import nn


class ToyConfig(types.SimpleNamespace):
    def to_json_file(self, path):
        with open(path, "w") as f:
            json.dump(vars(self), f, indent=1)


class RMSNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


class Rotary(nn.Module):
    def __init__(self, head_dim):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, head_dim, 2).float() / head_dim), False)

    def forward(self, x, position_ids):
        freqs = position_ids[..., None].float() * self.inv_freq.to(position_ids.device)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.head_dim, self.groups = c.head_dim, c.num_attention_heads // c.num_key_value_heads
        self.q_proj = nn.Linear(c.hidden_size, c.num_attention_heads * c.head_dim, bias=False)
        self.k_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.v_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.o_proj = nn.Linear(c.num_attention_heads * c.head_dim, c.hidden_size, bias=False)

    def forward(self, hidden_states, position_embeddings=None, **_):
        shape = (*hidden_states.shape[:-1], -1, self.head_dim)  # -1: the heads this rank holds
        q, k, v = (p(hidden_states).view(shape).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        cos, sin = (t.unsqueeze(1) for t in position_embeddings)
        half = self.head_dim // 2

        def rotate(x):
            return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin
        q, k = rotate(q), rotate(k)
        k, v = k.repeat_interleave(self.groups, 1), v.repeat_interleave(self.groups, 1)
        s = q.shape[-2]
        scores = (q @ k.transpose(-1, -2)) / self.head_dim ** 0.5
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
        out = (scores.softmax(-1) @ v).transpose(1, 2).reshape(*hidden_states.shape[:-1], -1)
        return self.o_proj(out), None


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Router(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.top_k = c.num_experts_per_tok
        self.weight = nn.Parameter(torch.randn(c.num_experts, c.hidden_size) * 0.02)

    def forward(self, x):
        logits = F.linear(x, self.weight).float().softmax(-1)
        top, idx = logits.topk(self.top_k, dim=-1)
        return logits, top / top.sum(-1, keepdim=True), idx


class Experts(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_experts = c.num_experts
        i, h = c.moe_intermediate_size, c.hidden_size
        self.gate_up_proj = nn.Parameter(torch.randn(c.num_experts, 2 * i, h) * 0.02)
        self.down_proj = nn.Parameter(torch.randn(c.num_experts, h, i) * 0.02)

    def forward(self, hidden, top_k_index, top_k_weights):
        out = torch.zeros_like(hidden)
        for e in range(self.num_experts):
            token, slot = torch.where(top_k_index == e)
            gate, up = F.linear(hidden[token], self.gate_up_proj[e]).chunk(2, dim=-1)
            y = F.linear(F.silu(gate) * up, self.down_proj[e]) * top_k_weights[token, slot, None]
            out = out.index_add(0, token, y.to(out.dtype))
        return out


class MoE(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gate, self.experts = Router(c), Experts(c)

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1])
        _, weights, idx = self.gate(flat)
        return self.experts(flat, idx, weights).reshape(x.shape)


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(c.hidden_size), RMSNorm(c.hidden_size)
        self.self_attn = Attention(c)
        self.mlp = MoE(c) if getattr(c, "num_experts", 0) else MLP(c)

    def forward(self, hidden_states, position_embeddings=None, **_):
        h = hidden_states + self.self_attn(hidden_states=self.input_layernorm(hidden_states),
                                           position_embeddings=position_embeddings)[0]
        return h + self.mlp(self.post_attention_layernorm(h))


class Inner(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c.vocab_size, c.hidden_size)
        self.layers = nn.ModuleList(Layer(c) for _ in range(c.num_hidden_layers))
        self.norm, self.rotary_emb = RMSNorm(c.hidden_size), Rotary(c.head_dim)

    def forward(self, input_ids):
        h = self.embed_tokens(input_ids)
        pos = torch.arange(h.shape[1], device=input_ids.device).unsqueeze(0)  # global length, as HF's cache_position
        pe = self.rotary_emb(h, pos)
        for layer in self.layers:
            h = layer(h, position_embeddings=pe, attention_mask=None, position_ids=pos)
        return self.norm(h)


class ToyLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.config = c
        self.model = Inner(c)
        self.lm_head = nn.Linear(c.hidden_size, c.vocab_size, bias=False)

    def gradient_checkpointing_enable(self, **_):
        pass  # nothing to save on a toy

    def forward(self, input_ids, labels=None):
        logits = self.lm_head(self.model(input_ids))
        loss = None if labels is None else F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())
        return types.SimpleNamespace(logits=logits, loss=loss)


def build_toy(spec, dtype, device):
    """(config, model) from a plan's config {model_type: toy_llama | toy_moe, sizes}, on `device` in `dtype`."""
    cfg = ToyConfig(**spec)
    model = ToyLM(cfg).to(device=device, dtype=dtype)
    return cfg, model
