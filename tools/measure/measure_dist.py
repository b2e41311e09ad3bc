#!/usr/bin/env python3
"""Measure per-rank peak GPU memory of multi-GPU training steps, in the calibration format.

usage: python3 tools/measure/measure_dist.py PLAN.json [--only NAME,...] [--part K/N] [--device cuda|cpu]
                                             [--backend nccl|gloo] [--launcher torchrun|spawn]
       python3 tools/measure/measure_dist.py --check PLAN.json...   (each case is one the harness runs; no torch)
Each case runs under `torchrun --standalone --nproc_per_node=WORLD` (WORLD = gpus × nodes, one host) in its own
processes; rank 0 gathers every rank's numbers and the case is written to $OUT/cases.jsonl with `measured` = the
most-loaded rank (the largest device_bytes) and `ranks` = all of them, each with its place in the mesh. --part K/N runs
the K-th of N consecutive slices of the plan (to fit a time limit per command). `--device cpu --backend gloo` runs the
same orchestration on CPU processes (spawning, meshes, collectives, gathering, the record) where there are no allocator
statistics: every byte figure is then 0. `--launcher spawn` starts the ranks with torchrun's environment but without
torchrun (whose 1.13 launcher, Debian's, does not start under Python 3.11).

Workload fields as in measure.py, plus these; all but `framework` are gpuplan train's flags of the same name, so
tests/calibration/score.py replays a case as it ran:
  gpus, nodes          ranks = gpus × nodes; `nodes` > 1 only with fsdp hybrid_shard (below)
  framework            ddp | fsdp2 | tp | pp | ep
  zero                 ddp: 0; fsdp2: 3 = fully_shard on every decoder layer and the root, resharding after forward;
                       2 = reshard_after_forward=False (gathered parameters kept from forward to backward)
  fsdp                 fsdp2 "hybrid_shard" (instead of zero): a 2-D (nodes, gpus) DeviceMesh, parameters sharded over
                       `gpus` ranks and replicated over `nodes` (HSDP; gpuplan: ZeRO-3 within a node of `gpus`)
  offload_optimizer, offload_params   fsdp2 "cpu": CPUOffloadPolicy, which keeps parameters, gradients and the
                       optimizer step on the host (so a case sets both)
  tp, sp               Megatron-style plan through torch.distributed.tensor.parallel over `tp` ranks: q/k/v/gate/up
                       column-parallel, o/down row-parallel, vocab-parallel embedding and lm_head, loss_parallel.
                       sp = sequence parallelism: the norms and the residual stream sharded on the sequence (DTensors
                       between the blocks), all-gathered before attention and MLP, reduce-scattered after.
                       framework tp: all ranks; fsdp2 with tp: a (dp, tp) mesh, FSDP over dp; pp with tp: (pp, tp)
  pp, grad_accum       pp: decoder layers split evenly over `pp` stages, Schedule1F1B over grad_accum micro-batches of
                       `batch` sequences (torch.distributed.pipelining)
  ep                   ep: each MoE block's experts split over `ep` ranks (transformers 5's fused experts:
                       gate_up_proj [E, 2I, H], down_proj [E, H, I]), routed tokens dispatched and combined by
                       all-to-all; dense parameters under DDP, expert gradients all-reduced over the gpus/ep ranks
                       that hold the same experts
  amp-bf16 precision   ddp, ep: torch.autocast; fsdp2: MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)
"""
import contextlib
import json
import os
import sys
import time
import types

from measure import parse_args, run_plan, summarize_segments  # noqa: E402  (same folder)

OUT = os.environ.get("OUT", "/tmp/measure")


# ---- the plan: which layouts the harness runs (no torch needed) ----

def layout(w):
    """(world, dp, tp, pp, ep) of a workload; SystemExit with the reason for a layout the harness does not run."""
    nodes, tp, pp, ep = w.get("nodes", 1), w.get("tp", 1), w.get("pp", 1), w.get("ep", 1)
    world = w["gpus"] * nodes
    fw = w.get("framework")
    runs = {"ddp": tp == pp == ep == 1 and w.get("zero") == 0,
            "fsdp2": pp == ep == 1 and world % tp == 0 and (w.get("zero") in (2, 3)) != (w.get("fsdp") == "hybrid_shard"),
            "tp": tp == world and pp == ep == 1,
            "pp": pp * tp == world and ep == 1 and w.get("grad_accum", 0) >= pp,
            "ep": tp == pp == 1 and ep > 1 and world % ep == 0 and w.get("zero") == 0}
    if fw not in runs:
        raise SystemExit(f"unknown framework {fw!r} (expected: {', '.join(runs)})")
    hybrid = w.get("fsdp") == "hybrid_shard"
    if not runs[fw] or (nodes > 1) != hybrid or (hybrid and tp > 1) or (w.get("sp") and tp < 2):
        raise SystemExit(f"{fw}: gpus {w['gpus']} × nodes {nodes}, tp {tp} sp {bool(w.get('sp'))}, pp {pp} "
                         f"(micro-batches {w.get('grad_accum', 1)}), ep {ep}, zero {w.get('zero')}, "
                         f"fsdp {w.get('fsdp')}: not a layout this harness runs")
    if w.get("offload_optimizer", "none") != w.get("offload_params", "none") or (
            w.get("offload_optimizer", "none") != "none" and fw != "fsdp2"):
        raise SystemExit("offload: CPUOffloadPolicy moves parameters and optimizer together (fsdp2 only)")
    return world, world // (tp * pp), tp, pp, ep


def world_size(case):
    return case["workload"]["gpus"] * case["workload"].get("nodes", 1)


def check_plans(paths):
    """Every case of every plan has a layout the harness runs and a unique name; prints the reason otherwise."""
    bad, names = 0, set()
    for path in paths:
        for case in json.load(open(path)):
            try:
                layout(case["workload"])
                if case["name"] in names:
                    raise SystemExit("name used twice")
            except (SystemExit, KeyError) as e:
                bad += 1
                print(f"{path}: {case.get('name')}: {e}")
            names.add(case.get("name"))
    return 1 if bad else 0


def describe(w):
    """The stack's `framework`: what ran, in PyTorch's names."""
    tp = "torch.distributed.tensor.parallel" + (" with SequenceParallel" if w.get("sp") else "") + " (loss_parallel)"
    fsdp = "FSDP2 (torch.distributed.fsdp.fully_shard" + (", HSDP 2-D mesh" if w.get("fsdp") else "") + \
        (", CPUOffloadPolicy" if w.get("offload_params") == "cpu" else "") + ")"
    names = {"ddp": "DDP", "fsdp2": fsdp, "tp": tp, "pp": "torch.distributed.pipelining Schedule1F1B",
             "ep": "expert parallelism (all_to_all_single dispatch/combine) + DDP"}
    s = names[w["framework"]]
    return s + f" × {tp}" if w.get("tp", 1) > 1 and w["framework"] != "tp" else s


# ---- on a rank ----

class Device:
    """The allocator statistics a record needs; on the CPU (gloo) there are none and every figure is 0."""

    def __init__(self, torch, kind, local_rank):
        self.torch, self.cuda = torch, kind == "cuda"
        self.device = torch.device("cuda", local_rank) if self.cuda else torch.device("cpu")
        if self.cuda:
            torch.cuda.set_device(local_rank)

    def _stat(self, name):
        return getattr(self.torch.cuda, name)() if self.cuda else 0

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def allocated(self):
        return self._stat("memory_allocated")

    def peak_allocated(self):
        return self._stat("max_memory_allocated")

    def peak_reserved(self):
        return self._stat("max_memory_reserved")

    def reset_peaks(self):
        if self.cuda:
            self.torch.cuda.reset_peak_memory_stats()

    def empty_cache(self):
        if self.cuda:
            self.torch.cuda.empty_cache()

    def context(self):
        """Device memory the process holds beyond the caching allocator: CUDA context, kernels, NCCL's buffers."""
        if not self.cuda:
            return 0
        free, total = self.torch.cuda.mem_get_info()
        return (total - free) - self.torch.cuda.memory_reserved()

    def name(self):
        return self.torch.cuda.get_device_name(0) if self.cuda else "cpu"


def is_dtensor(p):
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:  # torch < 2.4 (Debian's 1.13 for the CPU mode): no DTensor parameters then
        return False
    return isinstance(p, DTensor)


def make_optimizer(torch, params, name):
    # DTensor (tensor-parallel, FSDP2) and plain (replicated norm) parameters go into separate groups: one foreach/fused
    # kernel call may not mix them.
    params = [p for p in params if p.requires_grad]
    groups = [{"params": g} for g in ([p for p in params if is_dtensor(p)], [p for p in params if not is_dtensor(p)]) if g]
    if name == "adamw":
        return torch.optim.AdamW(groups, lr=1e-5, foreach=True)
    if name == "adamw-fused":
        return torch.optim.AdamW(groups, lr=1e-5, fused=True)
    raise SystemExit(f"unknown optimizer {name}")


def build(torch, case, dev):
    w = case["workload"]
    dtype = torch.float32 if w["precision"] in ("fp32", "amp-bf16") else torch.bfloat16
    torch.manual_seed(0)
    spec = dict(case["config"])
    if spec["model_type"].startswith("toy"):
        from toy_model import build_toy
        cfg, model = build_toy(spec, dtype, dev.device)
    else:
        from transformers import AutoConfig, AutoModelForCausalLM
        cfg = AutoConfig.for_model(spec.pop("model_type"), **spec)
        with dev.device:  # initialise on the GPU: minutes faster than on the CPU for billions of weights
            model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation=w.get("attention", "sdpa"))
    model.config.use_cache = False
    if w.get("grad_checkpointing"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    return cfg, model


def step_loop(dev, step, opt, m):
    """Three steps; peaks per phase as measure.py records them."""
    phases = []
    peak_alloc = peak_res = 0
    for _ in range(3):
        dev.reset_peaks()
        dev.sync()
        t0 = time.time()
        ph = step()
        ph["reserved_after_backward"] = dev.peak_reserved()
        opt.step()
        opt.zero_grad(set_to_none=True)
        dev.sync()
        ph["step_peak"] = dev.peak_allocated()
        ph["reserved_after_step"] = dev.peak_reserved()
        ph["seconds"] = time.time() - t0
        phases.append(ph)
        peak_alloc = max(peak_alloc, dev.peak_allocated())
        peak_res = max(peak_res, dev.peak_reserved())
    m["phases"] = phases
    m["state_after_step_bytes"] = dev.allocated()
    return peak_alloc, peak_res


def fwd_bwd(dev, forward, after_backward=None):
    def run():
        loss = forward()
        dev.sync()
        ph = {"fwd_peak": dev.peak_allocated()}
        loss.backward()
        if after_backward:
            after_backward()
        dev.sync()
        ph["bwd_peak"] = dev.peak_allocated()
        return ph
    return run


def mesh(c, shape, names):
    from torch.distributed.device_mesh import init_device_mesh
    return init_device_mesh(c.dev.device.type, shape, mesh_dim_names=names)


def tp_plans(sp, local_logits):
    """Megatron's split as DTensor styles: (per decoder layer, embedding, final norm, lm_head). With sequence
    parallelism the residual stream stays a DTensor sharded on the sequence (Shard(1)) from the embedding to the
    lm_head, so the model sees the full sequence length (positions, masks) while each rank holds s/tp of it."""
    from torch.distributed.tensor import Replicate, Shard
    from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                                   SequenceParallel)
    out = {"output_layouts": Shard(1), "use_local_output": False} if sp else {}
    layer = {"self_attn.q_proj": ColwiseParallel(), "self_attn.k_proj": ColwiseParallel(),
             "self_attn.v_proj": ColwiseParallel(), "self_attn.o_proj": RowwiseParallel(**out),
             "mlp.gate_proj": ColwiseParallel(), "mlp.up_proj": ColwiseParallel(), "mlp.down_proj": RowwiseParallel(**out)}
    head = ColwiseParallel(output_layouts=Shard(-1), use_local_output=local_logits, **({"input_layouts": Shard(1)} if sp else {}))
    if not sp:
        return layer, RowwiseParallel(input_layouts=Replicate()), None, head
    layer.update({"input_layernorm": SequenceParallel(), "post_attention_layernorm": SequenceParallel(),
                  # HF's decoder layer calls self_attn(hidden_states=...) and mlp(hidden_states)
                  # (plain tensors inside, as without sp)
                  "self_attn": PrepareModuleInput(input_kwarg_layouts={"hidden_states": Shard(1)},
                                                  desired_input_kwarg_layouts={"hidden_states": Replicate()},
                                                  use_local_output=True),
                  "mlp": PrepareModuleInput(input_layouts=(Shard(1),), desired_input_layouts=(Replicate(),),
                                            use_local_output=True)})
    return layer, RowwiseParallel(input_layouts=Replicate(), **out), SequenceParallel(), head


def parallelize_tp(tp_mesh, sp, layers, embed=None, norm=None, head=None, local_logits=False):
    from torch.distributed.tensor.parallel import parallelize_module
    layer_plan, embed_plan, norm_plan, head_plan = tp_plans(sp, local_logits)
    for layer in layers:
        parallelize_module(layer, tp_mesh, layer_plan)
    for mod, plan in ((embed, embed_plan), (norm, norm_plan), (head, head_plan)):
        if mod is not None and plan is not None:
            parallelize_module(mod, tp_mesh, plan)


def tp_step(c):
    """Forward without labels, vocabulary-parallel cross-entropy on the sharded logits, backward."""
    import torch
    from torch.distributed.tensor.parallel import loss_parallel
    labels = c.ids.flatten()

    def run():
        with loss_parallel():
            logits = c.model(input_ids=c.ids).logits  # DTensor sharded over the vocabulary
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), labels)
            c.dev.sync()
            ph = {"fwd_peak": c.dev.peak_allocated()}
            del logits
            loss.backward()
        c.dev.sync()
        ph["bwd_peak"] = c.dev.peak_allocated()
        return ph
    return run


def hf_loss(c, autocast=False):
    import torch

    def forward():
        with torch.autocast(c.dev.device.type, dtype=torch.bfloat16, enabled=autocast):
            return c.model(input_ids=c.ids, labels=c.ids).loss
    return forward


def setup_ddp(c):
    from torch.nn.parallel import DistributedDataParallel as DDP
    c.model = DDP(c.model, device_ids=[c.dev.device.index] if c.dev.cuda else None)
    return fwd_bwd(c.dev, hf_loss(c, c.amp)), make_optimizer(c.torch, c.model.parameters(), c.w["optimizer"])


def setup_fsdp2(c):
    import torch
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard
    w = c.w
    hybrid = w.get("fsdp") == "hybrid_shard"
    if c.tp > 1:  # FSDP × TP: TP inside each (dp, tp) row, FSDP across rows (torchtitan's 2-D layout)
        m2 = mesh(c, (c.dp, c.tp), ("dp", "tp"))
        inner = c.model.model
        parallelize_tp(m2["tp"], w.get("sp"), inner.layers, inner.embed_tokens, inner.norm, c.model.lm_head)
        shard_mesh = m2["dp"]
        c.m["mesh"] = {"dp": m2.get_local_rank("dp"), "tp": m2.get_local_rank("tp")}
    elif hybrid:  # HSDP: replicate over dim 0, shard over dim 1
        shard_mesh = mesh(c, (w["nodes"], w["gpus"]), ("replicate", "shard"))
        c.m["mesh"] = {"replicate": shard_mesh.get_local_rank("replicate"), "shard": shard_mesh.get_local_rank("shard")}
    else:
        shard_mesh = mesh(c, (c.world,), ("dp",))
    kw = {"mesh": shard_mesh, "reshard_after_forward": hybrid or w.get("zero") == 3,
          "offload_policy": CPUOffloadPolicy() if w.get("offload_params") == "cpu" else OffloadPolicy(),
          "mp_policy": MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if c.amp
          else MixedPrecisionPolicy()}
    for layer in c.model.model.layers:
        fully_shard(layer, **kw)
    fully_shard(c.model, **kw)
    step = tp_step(c) if c.tp > 1 else fwd_bwd(c.dev, hf_loss(c))
    return step, make_optimizer(torch, c.model.parameters(), w["optimizer"])


def setup_tp(c):
    tp_mesh = mesh(c, (c.world,), ("tp",))
    inner = c.model.model
    parallelize_tp(tp_mesh, c.w.get("sp"), inner.layers, inner.embed_tokens, inner.norm, c.model.lm_head)
    return tp_step(c), make_optimizer(c.torch, c.model.parameters(), c.w["optimizer"])


def stage_module(c, stage, stages, tp_mesh):
    """This rank's pipeline stage of the HF model: its share of the decoder layers, the embedding on the first and
    the final norm and lm_head on the last; what it does not hold is dropped."""
    import torch
    model, inner = c.model, c.model.model
    n = c.cfg.num_hidden_layers
    per = n // stages
    lo, hi = stage * per, (n if stage == stages - 1 else (stage + 1) * per)
    sp = bool(c.w.get("sp"))
    first, last = stage == 0, stage == stages - 1

    class Stage(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = inner.embed_tokens if first else None
            self.layers = torch.nn.ModuleList(inner.layers[lo:hi])
            self.rotary = inner.rotary_emb
            self.norm = inner.norm if last else None
            self.head = model.lm_head if last else None

        def forward(self, x):
            if self.embed is not None:
                h = self.embed(x)
            elif sp:  # the sequence shard the previous stage sent, as the DTensor the layers expect
                from torch.distributed.tensor import DTensor, Shard
                h = DTensor.from_local(x, tp_mesh, [Shard(1)], run_check=False)
            else:
                h = x
            pos = torch.arange(h.shape[1], device=x.device).unsqueeze(0)
            pe = self.rotary(h, pos)
            for layer in self.layers:
                out = layer(h, position_embeddings=pe, attention_mask=None, position_ids=pos)
                h = out[0] if isinstance(out, tuple) else out
            if self.head is not None:
                return self.head(self.norm(h))
            return h.to_local() if sp else h

    mod = Stage()
    if tp_mesh is not None:
        parallelize_tp(tp_mesh, sp, mod.layers, mod.embed, mod.norm, mod.head, local_logits=True)
    keep = {id(p) for p in mod.parameters()}
    for p in model.parameters():
        if id(p) not in keep:
            p.data = torch.empty(0, device=c.dev.device, dtype=p.dtype)
    return mod


def setup_pp(c):
    import torch
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B
    pp, tp = c.pp, c.tp
    if tp > 1:
        m2 = mesh(c, (pp, tp), ("pp", "tp"))
        stage, group, tp_mesh = m2.get_local_rank("pp"), m2.get_group("pp"), m2["tp"]
        c.m["mesh"] = {"pp": stage, "tp": m2.get_local_rank("tp")}
    else:
        stage, group, tp_mesh = c.rank, None, None
    c.m["stage"] = stage
    first, last = stage == 0, stage == pp - 1
    mod = stage_module(c, stage, pp, tp_mesh)
    c.model = mod
    # Shapes are inferred in the first step, from a no-grad forward on zeros (with DTensor layers too).
    pipe = PipelineStage(mod, stage, pp, c.dev.device, group=group)

    def loss_fn(logits, target):
        if tp_mesh is not None:  # this rank's vocabulary shard of the logits
            from torch.distributed.tensor import DTensor, Shard
            logits = DTensor.from_local(logits, tp_mesh, [Shard(-1)], run_check=False)
        return torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), target.flatten())
    sched = Schedule1F1B(pipe, n_microbatches=c.w["grad_accum"], loss_fn=loss_fn)
    full = c.ids.repeat(c.w["grad_accum"], 1)  # grad_accum micro-batches of `batch` sequences
    if tp > 1:
        from torch.distributed.tensor.parallel import loss_parallel
        context = loss_parallel
    else:
        context = contextlib.nullcontext

    def run():
        with context():  # the schedule runs the loss's backward too
            if first:
                sched.step(full)
            elif last:
                sched.step(target=full)
            else:
                sched.step()
        c.dev.sync()
        return {"bwd_peak": c.dev.peak_allocated()}
    return run, make_optimizer(torch, mod.parameters(), c.w["optimizer"])


def block_groups(dist, world, size):
    """(the group of `size` consecutive ranks holding this rank, the group of ranks at its offset in every block);
    every rank creates every group, in one order, as new_group requires."""
    rank = dist.get_rank()
    mine = across = None
    for start in range(0, world, size):
        g = dist.new_group(list(range(start, start + size)))
        if start <= rank < start + size:
            mine = g
    if world > size:
        for off in range(size):
            g = dist.new_group(list(range(off, world, size)))
            if rank % size == off:
                across = g
    return mine, across


def ep_forward(torch, dist, group, ep, ep_rank, block, hidden):
    """An MoE block with its experts split over `ep` ranks: route locally, send each routed token copy to the rank
    holding its expert (all-to-all), run the local experts, send the outputs back and combine them with the router's
    weights. Autograd runs through torch.distributed.nn's all_to_all_single."""
    from torch.distributed.nn.functional import all_to_all_single
    flat = hidden.reshape(-1, hidden.shape[-1])
    _, weights, chosen = block.gate(flat)  # transformers 5 routers: (logits, top-k weights, top-k expert ids)
    k, per = chosen.shape[1], block.experts.num_experts
    ids = chosen.flatten()
    order = torch.argsort(ids // per)
    token = torch.div(order, k, rounding_mode="floor")
    send = torch.bincount(ids // per, minlength=ep)
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send, group=group)
    s, r = send.tolist(), recv.tolist()
    x = all_to_all_single(flat.new_empty(sum(r), flat.shape[1]), flat[token], r, s, group=group)
    rid = ids.new_empty(sum(r))
    dist.all_to_all_single(rid, ids[order], r, s, group=group)
    y = block.experts(x, (rid - ep_rank * per)[:, None], x.new_ones(sum(r), 1))
    back = all_to_all_single(flat.new_empty(sum(s), flat.shape[1]), y, s, r, group=group)
    out = torch.zeros_like(flat).index_add(0, token, (back * weights.flatten()[order, None]).to(flat.dtype))
    return out.reshape(hidden.shape)


def shard_experts(c, group, ep_rank):
    """Keep this rank's 1/ep of every MoE block's experts and route through ep_forward; the experts' names."""
    import functools
    torch, ep = c.torch, c.ep
    blocks = [m for m in c.model.modules() if hasattr(m, "gate") and hasattr(getattr(m, "experts", None), "gate_up_proj")]
    if not blocks:
        raise SystemExit("ep: no MoE block with transformers 5's fused experts (.gate, .experts.gate_up_proj)")
    for block in blocks:
        ex = block.experts
        n = ex.num_experts
        if n % ep or hasattr(block, "shared_expert"):
            raise SystemExit(f"ep: {n} experts over {ep} ranks (or a shared expert): not run")
        lo, hi = ep_rank * n // ep, (ep_rank + 1) * n // ep
        for name, p in list(ex.named_parameters(recurse=False)):
            if p.shape[0] == n:
                setattr(ex, name, torch.nn.Parameter(p.data[lo:hi].clone()))
        ex.num_experts = hi - lo
        block.forward = types.MethodType(functools.partial(ep_forward, torch, c.dist, group, ep, ep_rank), block)
    return [n for n, _ in c.model.named_parameters() if ".experts." in n]


def setup_ep(c):
    from torch.nn.parallel import DistributedDataParallel as DDP
    group, replicas = block_groups(c.dist, c.world, c.ep)
    ep_rank = c.rank % c.ep
    c.m["mesh"] = {"ep": ep_rank, "expert_replica": c.rank // c.ep}
    experts = shard_experts(c, group, ep_rank)
    expert_params = [p for n, p in c.model.named_parameters() if n in set(experts)]
    DDP._set_params_and_buffers_to_ignore_for_model(c.model, experts)  # DDP all-reduces the dense parameters only
    c.model = DDP(c.model, device_ids=[c.dev.device.index] if c.dev.cuda else None)

    def reduce_experts():
        # An expert's gradient holds the tokens of its ep group's ranks; summed over the replicas it covers every
        # rank's, and / world makes it the gradient of the mean loss, as DDP makes the dense ones.
        for p in expert_params:
            if p.grad is not None:
                if replicas is not None:
                    c.dist.all_reduce(p.grad, group=replicas)
                p.grad.div_(c.world)
    return fwd_bwd(c.dev, hf_loss(c, c.amp), reduce_experts), make_optimizer(c.torch, c.model.parameters(),
                                                                            c.w["optimizer"])


SETUPS = {"ddp": setup_ddp, "fsdp2": setup_fsdp2, "tp": setup_tp, "pp": setup_pp, "ep": setup_ep}


def record(case, dev, cfg, gathered):
    import torch
    try:
        import transformers
        tf_version = transformers.__version__
    except ImportError:
        tf_version = None
    w = case["workload"]
    worst = max(gathered, key=lambda r: r["device_bytes"])
    rec = {"name": case["name"], "mode": "train", "model": case.get("model", case["name"]),
           "config": f"configs/{case['name']}.json", "workload": w, "measured": worst, "ranks": gathered,
           "stack": {"gpu": dev.name(), "torch": torch.__version__, "transformers": tf_version,
                     "cuda": torch.version.cuda, "framework": describe(w)}}
    os.makedirs(os.path.join(OUT, "configs"), exist_ok=True)
    cfg.to_json_file(os.path.join(OUT, rec["config"]))
    print("RESULT " + json.dumps(rec), flush=True)


def run_rank(case, device, backend):
    import torch
    import torch.distributed as dist
    w = case["workload"]
    world, dp, tp, pp, ep = layout(w)
    rank = int(os.environ["RANK"])
    if int(os.environ["WORLD_SIZE"]) != world:
        raise SystemExit(f"launched {os.environ['WORLD_SIZE']} ranks for a case of {world}")
    dev = Device(torch, device, int(os.environ["LOCAL_RANK"]))
    m = {"rank": rank}
    if dev.cuda:
        torch.empty(1, device=dev.device)
        dev.sync()
    m["context_cuda_bytes"] = dev.context()  # CUDA context and PyTorch's kernels, before any communicator
    dist.init_process_group(backend)
    dist.barrier()
    dev.sync()
    m["context_world_bytes"] = dev.context()  # + the world communicator and its buffers
    cfg, model = build(torch, case, dev)
    dev.sync()
    m["weights_full_bytes"] = dev.allocated()  # the whole model on every rank, before it is split
    torch.manual_seed(1)  # the same batch on every rank (TP needs it; harmless elsewhere)
    ids = torch.randint(0, cfg.vocab_size, (w["batch"], w["seq"]), device=dev.device)
    c = types.SimpleNamespace(torch=torch, dist=dist, dev=dev, case=case, w=w, cfg=cfg, model=model, ids=ids, m=m,
                              rank=rank, world=world, dp=dp, tp=tp, pp=pp, ep=ep, amp=w["precision"] == "amp-bf16")
    step, opt = SETUPS[w["framework"]](c)
    del model
    dev.empty_cache()
    m["weights_bytes"] = dev.allocated()  # this rank's share
    alloc, res = step_loop(dev, step, opt, m)
    if os.environ.get("SNAPSHOT") and dev.cuda:
        m["segments"] = summarize_segments(torch)
    ctx = dev.context()  # + every communicator the run created (sub-meshes, pipeline, expert groups)
    m.update({"context_bytes": ctx, "device_bytes": res + ctx, "reserved_bytes": res, "allocated_bytes": alloc})
    gathered = [None] * world
    dist.all_gather_object(gathered, m)
    if rank == 0:
        record(case, dev, cfg, gathered)
    dist.barrier()
    if backend == "gloo":
        # torch 1.13's gloo teardown can deadlock (~ProcessGroupGloo joins a thread that waits for the GIL the
        # destructor holds): everything is written, so leave without it.
        sys.stdout.flush()
        os._exit(0)
    dist.destroy_process_group()


def take_option(name, default):
    """The value after `name` in sys.argv (removed from it), else default."""
    if name not in sys.argv:
        return default
    i = sys.argv.index(name)
    value = sys.argv[i + 1]
    del sys.argv[i:i + 2]
    return value


def spawn(world, rank_argv):
    """torchrun's contract (MASTER_ADDR/PORT, RANK, LOCAL_RANK, WORLD_SIZE) without torchrun, for `--launcher spawn`
    where torchrun does not start (Debian's torch 1.13 launcher fails under Python 3.11); exits with the worst rank's
    status."""
    import socket
    import subprocess
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(world),
               LOCAL_WORLD_SIZE=str(world), OMP_NUM_THREADS="1")
    procs = [subprocess.Popen(rank_argv, env=dict(env, RANK=str(r), LOCAL_RANK=str(r))) for r in range(world)]
    while any(p.poll() is None for p in procs):
        if any(p.poll() for p in procs):  # a rank failed: the others would wait for it in a collective forever
            for p in procs:
                if p.poll() is None:
                    p.kill()
        time.sleep(0.2)
    return max(p.returncode for p in procs)


def launch(launcher, device, backend):
    """The argv that starts one case's ranks."""
    def command(case, path):
        rank = [__file__, "--rank", path, device, backend]
        if launcher == "spawn":
            return [sys.executable, __file__, "--spawn", str(world_size(case))] + [sys.executable] + rank
        return [sys.executable, "-m", "torch.distributed.run", "--standalone",
                f"--nproc_per_node={world_size(case)}"] + rank
    return command


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == "--rank":
        run_rank(json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4])
        return
    if len(sys.argv) >= 4 and sys.argv[1] == "--spawn":
        sys.exit(spawn(int(sys.argv[2]), sys.argv[3:]))
    if len(sys.argv) >= 3 and sys.argv[1] == "--check":
        sys.exit(check_plans(sys.argv[2:]))
    device, backend = take_option("--device", "cuda"), take_option("--backend", "nccl")
    launcher = take_option("--launcher", "torchrun")
    part = take_option("--part", "1/1")
    plan, only = parse_args()
    if check_plans([sys.argv[1]]):
        sys.exit(2)
    try:
        k, n = (int(x) for x in part.split("/"))
        assert 1 <= k <= n
    except (ValueError, AssertionError):
        sys.exit(f"--part {part}: expected K/N with 1 <= K <= N")
    plan = plan[(k - 1) * len(plan) // n:k * len(plan) // n]
    run_plan(plan, only, "cases.jsonl", launch(launcher, device, backend), 300)


if __name__ == "__main__":
    main()
