#!/usr/bin/env python3
"""The expert-parallel dispatch of measure_dist.py computes what the unsplit MoE block computes.

usage: python3 tools/measure/measure_dist.py --spawn 4 python3 tools/measure/ep_check.py   (CPU ranks, gloo)
Each rank routes its own tokens through the toy MoE block (toy_model.py), whole, then with its experts split over the
ranks (measure_dist.shard_experts); the outputs and the gradients of the input, the router and its experts must agree
(an expert's split gradient = the sum over ranks of the whole block's). Prints one line per rank; exits 1 on a mismatch.
"""
import os
import sys
import types

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import measure_dist  # noqa: E402
from toy_model import build_toy  # noqa: E402

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
spec = {"model_type": "toy_moe", "vocab_size": 64, "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
        "num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 8, "num_experts": 2 * world,
        "num_experts_per_tok": 2, "moe_intermediate_size": 8}
torch.manual_seed(0)  # the same block on every rank
_, model = build_toy(spec, torch.float64, torch.device("cpu"))
block = model.model.layers[0].mlp
torch.manual_seed(10 + rank)  # its own tokens, as under data parallelism
x = torch.randn(3, 5, 16, dtype=torch.float64, requires_grad=True)
whole = block(x)
whole.sum().backward()
grads = (x.grad.clone(), block.gate.weight.grad.clone(), block.experts.gate_up_proj.grad.clone())
dist.all_reduce(grads[2])
x.grad = None
block.gate.weight.grad = None
group, _ = measure_dist.block_groups(dist, world, world)
measure_dist.shard_experts(types.SimpleNamespace(torch=torch, dist=dist, model=model, ep=world), group, rank)
split = block(x)
split.sum().backward()


def same(a, b):
    return a is not None and torch.allclose(a, b)


ok = {"output": same(split, whole), "input grad": same(x.grad, grads[0]),
      "router grad": same(block.gate.weight.grad, grads[1]),
      "expert grads": same(block.experts.gate_up_proj.grad, grads[2][2 * rank:2 * rank + 2])}
print(f"rank {rank}: " + ", ".join(f"{k} {'equal' if v else 'DIFFERENT'}" for k, v in ok.items()), flush=True)
dist.barrier()
sys.stdout.flush()
os._exit(0 if all(ok.values()) else 1)  # (skips gloo's teardown, as measure_dist does)
