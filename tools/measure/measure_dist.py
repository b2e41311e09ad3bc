#!/usr/bin/env python3
"""Measure per-rank peak GPU memory of multi-GPU training steps, in the calibration format.

usage: python3 tools/measure/measure_dist.py PLAN.json [--only NAME,...]
Each case runs under `torchrun --standalone --nproc_per_node=G` in its own processes; rank 0 gathers every rank's
numbers and the case is written to $OUT/cases.jsonl with `measured` = the most-loaded rank and `ranks` = all.

Workload fields as in measure.py, plus:
  gpus                    ranks (one node)
  framework               ddp | fsdp2 | tp | pp
  zero                    fsdp2: 3 = fully_shard (reshard after forward), 2 = keep gathered until backward
  offload_optimizer       fsdp2: "cpu" = CPUOffloadPolicy (parameters, gradients and the optimizer on the host)
  tp                      tp: Megatron-style plan through torch.distributed.tensor.parallel (q/k/v/gate/up
                          column-parallel, o/down row-parallel, vocab-parallel embedding and lm_head, loss_parallel)
  pp, grad_accum          pp: decoder layers split evenly over `pp` stages, Schedule1F1B over grad_accum
                          micro-batches of `batch` sequences (torch.distributed.pipelining)
"""
import json
import os
import sys
import time

from measure import parse_args, run_plan, summarize_segments  # noqa: E402  (same folder)

OUT = os.environ.get("OUT", "/tmp/measure")


def make_optimizer(torch, params, name):
    # DTensor (tensor-parallel) and plain (replicated norm) parameters go into separate groups: one foreach/fused
    # kernel call may not mix them.
    from torch.distributed.tensor import DTensor
    groups = [g for g in ([p for p in params if isinstance(p, DTensor)], [p for p in params if not isinstance(p, DTensor)]) if g]
    groups = [{"params": g} for g in groups]
    if name == "adamw":
        return torch.optim.AdamW(groups, lr=1e-5, foreach=True)
    if name == "adamw-fused":
        return torch.optim.AdamW(groups, lr=1e-5, fused=True)
    raise SystemExit(f"unknown optimizer {name}")


def build(torch, case, device):
    from transformers import AutoConfig, AutoModelForCausalLM
    spec = dict(case["config"])
    cfg = AutoConfig.for_model(spec.pop("model_type"), **spec)
    w = case["workload"]
    dtype = torch.float32 if w["precision"] in ("fp32", "amp-bf16") else torch.bfloat16
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation=w.get("attention", "sdpa"))
    model.config.use_cache = False
    if w.get("grad_checkpointing"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    return cfg, model


def step_loop(torch, model_step, opt, m):
    """Three steps; peaks per phase as measure.py records them."""
    phases = []
    peak_alloc = peak_res = 0
    for _ in range(3):
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
        t0 = time.time()
        ph = model_step()
        ph["reserved_after_backward"] = torch.cuda.max_memory_reserved()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        ph["step_peak"] = torch.cuda.max_memory_allocated()
        ph["reserved_after_step"] = torch.cuda.max_memory_reserved()
        ph["seconds"] = time.time() - t0
        phases.append(ph)
        peak_alloc = max(peak_alloc, torch.cuda.max_memory_allocated())
        peak_res = max(peak_res, torch.cuda.max_memory_reserved())
    m["phases"] = phases
    m["state_after_step_bytes"] = torch.cuda.memory_allocated()
    return peak_alloc, peak_res


def fwd_bwd(torch, forward):
    def run():
        loss = forward()
        torch.cuda.synchronize()
        ph = {"fwd_peak": torch.cuda.max_memory_allocated()}
        loss.backward()
        torch.cuda.synchronize()
        ph["bwd_peak"] = torch.cuda.max_memory_allocated()
        return ph
    return run


def run_rank(case):
    import torch
    import torch.distributed as dist
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")
    w = case["workload"]
    fw = w["framework"]
    m = {"rank": rank}
    torch.empty(1, device="cuda")
    dist.barrier()  # NCCL communicator and its buffers exist from here on
    cfg, model = build(torch, case, "cuda")
    torch.cuda.synchronize()
    m["weights_bytes"] = torch.cuda.memory_allocated()
    b, s = w["batch"], w["seq"]
    torch.manual_seed(1)  # the same batch on every rank (TP needs it; harmless elsewhere)
    ids = torch.randint(0, cfg.vocab_size, (b, s), device="cuda")
    amp = w["precision"] == "amp-bf16"

    if fw == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        model = DDP(model, device_ids=[torch.cuda.current_device()])
        opt = make_optimizer(torch, [p for p in model.parameters() if p.requires_grad], w["optimizer"])

        def forward():
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
                return model(input_ids=ids, labels=ids).loss
        alloc, res = step_loop(torch, fwd_bwd(torch, forward), opt, m)

    elif fw == "fsdp2":
        from torch.distributed.fsdp import CPUOffloadPolicy, OffloadPolicy, fully_shard
        offload = CPUOffloadPolicy() if w.get("offload_optimizer") == "cpu" else OffloadPolicy()
        reshard = w["zero"] == 3
        for layer in model.model.layers:
            fully_shard(layer, reshard_after_forward=reshard, offload_policy=offload)
        fully_shard(model, reshard_after_forward=reshard, offload_policy=offload)
        torch.cuda.empty_cache()
        m["weights_bytes"] = torch.cuda.memory_allocated()
        opt = make_optimizer(torch, [p for p in model.parameters() if p.requires_grad], w["optimizer"])
        alloc, res = step_loop(torch, fwd_bwd(torch, lambda: model(input_ids=ids, labels=ids).loss), opt, m)

    elif fw == "tp":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.tensor import Replicate, Shard
        from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel, loss_parallel,
                                                       parallelize_module)
        mesh = init_device_mesh("cuda", (world,))
        for layer in model.model.layers:
            parallelize_module(layer, mesh, {
                "self_attn.q_proj": ColwiseParallel(), "self_attn.k_proj": ColwiseParallel(),
                "self_attn.v_proj": ColwiseParallel(), "self_attn.o_proj": RowwiseParallel(),
                "mlp.gate_proj": ColwiseParallel(), "mlp.up_proj": ColwiseParallel(),
                "mlp.down_proj": RowwiseParallel()})
        parallelize_module(model, mesh, {
            "model.embed_tokens": RowwiseParallel(input_layouts=Replicate()),
            "lm_head": ColwiseParallel(output_layouts=Shard(-1), use_local_output=False)})
        torch.cuda.empty_cache()
        m["weights_bytes"] = torch.cuda.memory_allocated()
        opt = make_optimizer(torch, [p for p in model.parameters() if p.requires_grad], w["optimizer"])
        labels = ids.flatten()

        def run():
            with loss_parallel():
                logits = model(input_ids=ids).logits  # DTensor sharded over the vocabulary
                loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), labels)
                torch.cuda.synchronize()
                ph = {"fwd_peak": torch.cuda.max_memory_allocated()}
                del logits
                loss.backward()
            torch.cuda.synchronize()
            ph["bwd_peak"] = torch.cuda.max_memory_allocated()
            return ph
        alloc, res = step_loop(torch, run, opt, m)

    elif fw == "pp":
        from torch.distributed.pipelining import PipelineStage, Schedule1F1B
        L = cfg.num_hidden_layers
        per = L // world
        lo, hi = rank * per, (L if rank == world - 1 else (rank + 1) * per)
        inner = model.model

        class Stage(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = inner.embed_tokens if rank == 0 else None
                self.layers = torch.nn.ModuleList(inner.layers[lo:hi])
                self.rotary = inner.rotary_emb
                self.norm = inner.norm if rank == world - 1 else None
                self.head = model.lm_head if rank == world - 1 else None

            def forward(self, x):
                h = self.embed(x) if self.embed is not None else x
                pos = torch.arange(h.shape[1], device=h.device).unsqueeze(0)
                pe = self.rotary(h, pos)
                for layer in self.layers:
                    out = layer(h, position_embeddings=pe, attention_mask=None, position_ids=pos)
                    h = out[0] if isinstance(out, tuple) else out
                if self.head is not None:
                    h = self.head(self.norm(h))
                return h

        stage_mod = Stage()
        # Drop what this rank does not hold, then start the allocator statistics afresh.
        keep = {id(p) for p in stage_mod.parameters()}
        for p in model.parameters():
            if id(p) not in keep:
                p.data = torch.empty(0, device="cuda", dtype=p.dtype)
        del model, inner
        torch.cuda.empty_cache()
        m["weights_bytes"] = torch.cuda.memory_allocated()
        mb = w["grad_accum"]
        stage = PipelineStage(stage_mod, rank, world, torch.device("cuda"))

        def loss_fn(logits, target):
            return torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), target.flatten())
        sched = Schedule1F1B(stage, n_microbatches=mb, loss_fn=loss_fn)
        opt = make_optimizer(torch, [p for p in stage_mod.parameters() if p.requires_grad], w["optimizer"])
        full = ids.repeat(mb, 1)  # grad_accum micro-batches of `batch` sequences

        def run():
            if rank == 0:
                sched.step(full)
            elif rank == world - 1:
                sched.step(target=full)
            else:
                sched.step()
            torch.cuda.synchronize()
            return {"bwd_peak": torch.cuda.max_memory_allocated()}
        alloc, res = step_loop(torch, run, opt, m)
    else:
        raise SystemExit(f"unknown framework {fw}")

    if os.environ.get("SNAPSHOT"):
        m["segments"] = summarize_segments(torch)
    free, total = torch.cuda.mem_get_info()
    ctx = (total - free) - torch.cuda.memory_reserved()
    m.update({"context_bytes": ctx, "device_bytes": res + ctx, "reserved_bytes": res, "allocated_bytes": alloc})
    gathered = [None] * world
    dist.all_gather_object(gathered, m)
    if rank == 0:
        import transformers
        worst = max(gathered, key=lambda r: r["device_bytes"])
        names = {"ddp": "DDP", "fsdp2": "FSDP2 (torch.distributed.fsdp.fully_shard)",
                 "tp": "torch.distributed.tensor.parallel (loss_parallel)", "pp": "torch.distributed.pipelining Schedule1F1B"}
        rec = {"name": case["name"], "mode": "train", "model": case.get("model", case["name"]),
               "config": f"configs/{case['name']}.json", "workload": w, "measured": worst, "ranks": gathered,
               "stack": {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                         "transformers": transformers.__version__, "cuda": torch.version.cuda, "framework": names[fw]}}
        os.makedirs(os.path.join(OUT, "configs"), exist_ok=True)
        cfg.to_json_file(os.path.join(OUT, rec["config"]))
        print("RESULT " + json.dumps(rec), flush=True)
    dist.destroy_process_group()


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--rank":
        run_rank(json.load(open(sys.argv[2])))
        return
    plan, only = parse_args()
    run_plan(plan, only, "cases.jsonl",
             lambda case, path: [sys.executable, "-m", "torch.distributed.run", "--standalone",
                                 f"--nproc_per_node={case['workload']['gpus']}", __file__, "--rank", path], 300)


if __name__ == "__main__":
    main()
