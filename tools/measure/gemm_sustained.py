#!/usr/bin/env python3
"""Sustained matmul throughput: bf16 (and fp8 where supported) GEMMs on random normal data, back to back for
several seconds so that clocks settle at the power limit, as in training. Prints one JSON line per shape.
usage: gemm_sustained.py [SECONDS]"""
import json, sys, time
import torch

secs = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
dev = torch.cuda.get_device_name()
shapes = [(8192, 8192, 8192), (16384, 4096, 14336), (16384, 14336, 4096), (8192, 2048, 8192)]


def bench(fn, flops):
    fn(); torch.cuda.synchronize()
    t0 = time.time(); n = 0; t_half = None; n_half = 0
    while time.time() - t0 < secs:
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        n += 20
        if t_half is None and time.time() - t0 > secs / 2:
            t_half, n_half = time.time(), n
    t1 = time.time()
    return flops * (n - n_half) / (t1 - t_half)


for m, k, n in shapes:
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    r = bench(lambda: a @ b, 2.0 * m * k * n)
    out = {"gpu": dev, "dtype": "bf16", "m": m, "k": k, "n": n, "tflops": r / 1e12, "seconds": secs}
    try:
        a8 = a.to(torch.float8_e4m3fn)
        b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()
        one = torch.ones((), device="cuda")
        r8 = bench(lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16), 2.0 * m * k * n)
        out["fp8_tflops"] = r8 / 1e12
    except Exception as e:  # noqa: BLE001
        out["fp8_error"] = str(e)[:100]
    print(json.dumps(out), flush=True)
