#!/usr/bin/env python3
"""Hostile model sources on disk (issue #48): configs, safetensors folders, GGUF files and the Hugging Face cache
built to hang, exhaust memory, overflow sums, forge the terminal or escape the cache. Each must end in bounded
time with exit 0 (the input is in fact valid), 2 or 3, one line on stderr, no escape sequence in any output, and
in JSON only finite, non-negative numbers. (The Hub over HTTP: tests/hub/test_hub.py.)

usage: test_hostile.py GPUPLAN
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "checkpoints"))
from make_fixtures import (GGML, LLAMA_8B, gguf_kv, gguf_string, hf_cache, llama_gguf_metadata, llama_tensors,  # noqa: E402
                           write_folder, write_gguf, write_safetensors)

failures = []
SMALL = dict(LLAMA_8B, num_hidden_layers=2, vocab_size=1000)  # a valid model that estimates in milliseconds


def check(name, cond, detail=""):
    if not cond:
        failures.append(f"{name}: {detail}")


def numbers(j, path=""):
    if isinstance(j, dict):
        for k, v in j.items():
            yield from numbers(v, f"{path}/{k}")
    elif isinstance(j, list):
        for k, v in enumerate(j):
            yield from numbers(v, f"{path}/{k}")
    elif isinstance(j, (int, float)) and not isinstance(j, bool):
        yield path, j


def run(binary, name, args, rc_expected, message="", cwd=None):
    """Runs gpuplan; checks status, time, one line on error, no control characters, sane JSON numbers."""
    start = time.monotonic()
    try:
        p = subprocess.run([binary] + args, capture_output=True, timeout=30, cwd=cwd)
    except subprocess.TimeoutExpired:
        failures.append(f"{name}: still running after 30 s")
        return None
    took = time.monotonic() - start
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    check(name + " status", p.returncode == rc_expected, (p.returncode, err[:300]))
    check(name + " time", took < 10, f"{took:.1f} s")
    check(name + " message", message in err, err[:300])
    if p.returncode != 0:
        check(name + " one line", err.count("\n") == 1 and err.endswith("\n") and "internal error" not in err, err[:300])
    for stream, text in (("stdout", p.stdout), ("stderr", p.stderr)):
        bad = [c for c in text if c < 0x20 and c not in (0x0A, 0x09)] + [c for c in text if c == 0x7F]
        check(f"{name} {stream} control characters", not bad, bad[:5])
        try:
            text.decode("utf-8")
        except UnicodeDecodeError as e:
            failures.append(f"{name} {stream}: not UTF-8 ({e})")
    if p.returncode == 0 and "--format" in args:
        j = json.loads(out)
        for where, v in numbers(j):
            check(f"{name} {where}", math.isfinite(v) and v >= 0, v)
    return out


def write(path, text, mode="w"):
    with open(path, mode) as f:
        f.write(text)
    return path


def config(tmp, name, **fields):
    return write(os.path.join(tmp, name), json.dumps(dict(SMALL, **fields)))


def configs(binary, tmp):
    """Shapes whose work (per-layer tables, expert lists) or arithmetic (products past 2^63) a parser must refuse."""
    big = 1 << 62
    mixtral = dict(model_type="mixtral", num_local_experts=8, num_experts_per_tok=2)
    deepseek = dict(model_type="deepseek_v3", kv_lora_rank=512, q_lora_rank=1536, qk_nope_head_dim=128,
                    qk_rope_head_dim=64, v_head_dim=128, n_routed_experts=8, num_experts_per_tok=2,
                    moe_intermediate_size=256, first_k_dense_replace=1)
    qwen3_next = dict(model_type="qwen3_next", num_experts=8, num_experts_per_tok=2, moe_intermediate_size=256,
                      linear_num_key_heads=16, linear_num_value_heads=32, linear_key_head_dim=128,
                      linear_value_head_dim=128, linear_conv_kernel_dim=4)
    for name, fields, rc, msg in (
            ("1e9 layers, llama", dict(num_hidden_layers=10 ** 9), 3, "num_hidden_layers"),
            ("1e9 layers, mixtral", dict(mixtral, num_hidden_layers=10 ** 9), 3, "num_hidden_layers"),
            ("1e9 layers, sliding", dict(model_type="mistral", sliding_window=4096, num_hidden_layers=10 ** 9), 3,
             "num_hidden_layers"),
            ("head_dim 2^62", dict(head_dim=big), 3, "head_dim"),
            ("head_dim 2^30", dict(head_dim=1 << 30), 3, "head_dim"),
            ("2^62 experts", dict(mixtral, num_local_experts=big), 3, "num_experts"),
            ("2^20 experts", dict(mixtral, num_local_experts=1 << 20), 3, "num_experts"),
            ("no experts in an MoE family", dict(mixtral, num_local_experts=0), 3, "num_experts"),
            ("MLA 2^62", dict(deepseek, kv_lora_rank=big, qk_nope_head_dim=big), 3, "kv_lora_rank"),
            ("MLA 2^30", dict(deepseek, kv_lora_rank=1 << 30), 3, "kv_lora_rank"),
            ("linear attention 2^30", dict(qwen3_next, linear_key_head_dim=1 << 30), 3, "linear_key_head_dim"),
            ("linear attention 0", dict(qwen3_next, linear_conv_kernel_dim=0), 3, "linear_conv_kernel_dim"),
            ("vocab 2^40", dict(vocab_size=1 << 40), 3, "vocab_size"),
            ("gpt2 n_embd 2^40", dict(model_type="gpt2", n_embd=1 << 40, n_layer=2, n_head=1, n_positions=1024), 3,
             "hidden_size"),
            ("10^16 parameters", dict(hidden_size=1_000_000, intermediate_size=10_000_000, num_hidden_layers=100_000,
                                      num_attention_heads=1000, num_key_value_heads=1000, head_dim=1000), 3,
             "parameters"),
            ("rope_theta 1e999", dict(rope_theta="INF"), 3, "number overflow")):
        path = config(tmp, "c.json", **fields)
        if name == "rope_theta 1e999":  # JSON has no infinity; 1e999 parses as one
            write(path, open(path).read().replace('"INF"', "1e999"))
        run(binary, name, ["train", "--model", path, "--format", "json"], rc, msg)
        run(binary, name + " (infer)", ["infer", "--config", path], rc, msg)

    # Names from the file reach the terminal and JSON escaped; the file's own name may be any bytes.
    evil = "\x1b[2J\x1b]0;owned\x07\u0085evil"
    path = config(tmp, "named.json", _name_or_path=evil)
    out = run(binary, "escape sequences in _name_or_path", ["train", "--model", path], 0)
    check("name shown escaped", out is not None and "\\x1b[2J" in out, (out or "")[:300])
    run(binary, "escape sequences in _name_or_path (json)", ["infer", "--model", path, "--format", "json"], 0)
    run(binary, "escape sequences in model_type", ["train", "--model", config(tmp, "t.json", model_type=evil)], 3,
        "unsupported model_type")
    raw = os.path.join(tmp.encode(), b"\xff\xfe.json")
    with open(raw, "w") as f:
        json.dump(SMALL, f)
    run(binary, "a config named in invalid UTF-8", ["train", "--model", raw.decode("utf-8", "surrogateescape"),
                                                   "--format", "json"], 0)
    p = [binary, "train", "--model", raw, "--format", "json"]
    j = json.loads(subprocess.run(p, capture_output=True, timeout=30).stdout)
    check("invalid UTF-8 replaced", "\ufffd" in j["model"]["source"]["path"], j["model"]["source"])
    run(binary, "a name with a newline", ["train", "--model", write(os.path.join(tmp, "a\nb.json"), "{}")], 3,
        "model_type")
    run(binary, "an unknown model with escapes", ["train", "--model", "\x1b[31mred"], 2, "unknown model")


def files(binary, tmp):
    """Symlink loops, over-long names, unreadable places: one line that says where."""
    loop = os.path.join(tmp, "loop")
    os.symlink(loop, loop)
    run(binary, "symlink loop", ["train", "--model", loop], 3, "symbolic links")
    run(binary, "5000-character name", ["train", "--model", os.path.join(tmp, "x" * 5000)], 3, "too long")
    d = os.path.join(tmp, "loopdir")
    os.makedirs(d)
    write(os.path.join(d, "config.json"), json.dumps(SMALL))
    os.symlink("model.safetensors", os.path.join(d, "model.safetensors"))
    run(binary, "safetensors symlink loop", ["train", "--model", d], 3, "symbolic links")


def safetensors(binary, tmp):
    tensors = [(n, "BF16", s) for n, s in llama_tensors(SMALL)]
    # 1,000 tensors over the same bytes.
    d = os.path.join(tmp, "overlap")
    write_folder(d, SMALL, tensors, 1)
    header = {f"t{k}": {"dtype": "BF16", "shape": [1024, 1024], "data_offsets": [0, 2 << 20]} for k in range(1000)}
    blob = json.dumps(header).encode()
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        f.truncate(8 + len(blob) + (2 << 20))
    run(binary, "overlapping tensors", ["train", "--model", d], 3, "overlap")

    # Symlinked shards: one file under two names is read once.
    d = os.path.join(tmp, "linked")
    total = write_folder(d, SMALL, tensors, 1)
    os.symlink("model.safetensors", os.path.join(d, "model-copy.safetensors"))
    out = run(binary, "symlinked shard, no index", ["infer", "--model", d, "--format", "json"], 0)
    if out:
        ck = json.loads(out)["model"]["source"]["checkpoint"]
        check("symlinked shard read once", ck["language_model_bytes"] + ck["other_bytes"] == total, ck)
    half = len(tensors) // 2
    write(os.path.join(d, "model.safetensors.index.json"), json.dumps(
        {"weight_map": {t[0]: ("model.safetensors" if k < half else "model-copy.safetensors")
                        for k, t in enumerate(tensors)}}))
    out = run(binary, "symlinked shard, index", ["infer", "--model", d, "--format", "json"], 0)
    if out:
        ck = json.loads(out)["model"]["source"]["checkpoint"]
        check("index over a symlinked shard read once", ck["language_model_bytes"] + ck["other_bytes"] == total, ck)

    # A shard holding more than the index maps to it: only what the index maps there counts.
    d = os.path.join(tmp, "extra")
    total = write_folder(d, SMALL, tensors, 2)
    index = json.load(open(os.path.join(d, "model.safetensors.index.json")))
    write_safetensors(os.path.join(d, "model-00002-of-00002.safetensors"),
                      [t for t in tensors if index["weight_map"][t[0]].startswith("model-00002")] + tensors[:3])
    out = run(binary, "tensors the index maps elsewhere", ["infer", "--model", d, "--format", "json"], 0)
    if out:
        ck = json.loads(out)["model"]["source"]["checkpoint"]
        check("only mapped tensors", ck["language_model_bytes"] + ck["other_bytes"] == total, (ck, total))
    index["weight_map"]["lm_head.weight"] = "model-00001-of-00002.safetensors"  # it is in the second
    write(os.path.join(d, "model.safetensors.index.json"), json.dumps(index))
    run(binary, "index maps a tensor to a shard without it", ["infer", "--model", d], 3, "lacks tensors")
    index["weight_map"]["lm_head.weight"] = "config.json"
    write(os.path.join(d, "model.safetensors.index.json"), json.dumps(index))
    run(binary, "index maps a tensor to config.json", ["infer", "--model", d], 3, "not .safetensors")
    d = os.path.join(tmp, "many")
    os.makedirs(d)
    write(os.path.join(d, "config.json"), json.dumps(SMALL))
    write(os.path.join(d, "model.safetensors.index.json"),
          json.dumps({"weight_map": {f"t{k}": f"s{k}.safetensors" for k in range(5000)}}))
    run(binary, "5000 shards", ["infer", "--model", d], 3, "4096")


def gguf_u64(key, value):
    return gguf_string(key) + struct.pack("<IQ", 10, value)


def write_raw_gguf(path, kvs, tensors, offsets=None, pad=32):
    """kvs: raw key/value bytes; tensors: (name, type, shape); offsets: each tensor's, else packed."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs)
    off, size = 0, 0
    for k, (name, t, shape) in enumerate(tensors):
        tid, block, nbytes = GGML[t]
        o = offsets[k] if offsets else off
        head += gguf_string(name) + struct.pack("<I", len(shape)) + struct.pack(f"<{len(shape)}Q", *shape)
        head += struct.pack("<IQ", tid, o)
        n = (math.prod(shape) // block * nbytes + 31) // 32 * 32
        off += n
        size = max(size, o + n)
    with open(path, "wb") as f:
        f.write(head + b"\0" * (-len(head) % pad))
        f.truncate(len(head) + (-len(head) % pad) + size)


def gguf(binary, tmp):
    c = SMALL
    meta = {k: v for k, v in llama_gguf_metadata(c).items() if k != "tokenizer.ggml.tokens"}
    kvs = [gguf_kv(k, v) for k, v in meta.items()]
    tensors = [("token_embd.weight", "F16", [c["hidden_size"], c["vocab_size"]]),
               ("blk.0.attn_norm.weight", "F32", [c["hidden_size"]]), ("blk.1.attn_norm.weight", "F32", [c["hidden_size"]])]
    ok = os.path.join(tmp, "ok.gguf")
    write_raw_gguf(ok, kvs, tensors)
    run(binary, "a valid small GGUF", ["infer", "--model", ok, "--format", "json"], 0)
    for name, extra, offsets, rc, msg in (
            ("block_count 4e9 with a sliding window", [gguf_kv("llama.block_count", 4_000_000_000),
                                                       gguf_kv("llama.attention.sliding_window", 4096)], None, 3,
             "num_hidden_layers"),
            ("expert_count 2^62", [gguf_u64("llama.expert_count", 1 << 62), gguf_kv("llama.expert_used_count", 2)],
             None, 3, "num_experts"),
            ("key_length 2^62", [gguf_u64("llama.attention.key_length", 1 << 62)], None, 3, "head_dim"),
            ("alignment 0", [gguf_kv("general.alignment", 0)], None, 3, "alignment"),
            ("alignment 3", [gguf_kv("general.alignment", 3)], None, 3, "alignment"),
            ("alignment a string", [gguf_kv("general.alignment", "32")], None, 3, "alignment"),
            ("offsets all equal", [], [0, 0, 0], 3, "overlap"),
            ("offset unaligned", [], [0, 1 << 40, 7], 3, "alignment"),
            ("name with escapes", [gguf_kv("general.name", "\x1b[2J\x07x")], None, 0, "")):
        keys = {e[8:8 + struct.unpack("<Q", e[:8])[0]] for e in extra}
        kv = [e for e in kvs if e[8:8 + struct.unpack("<Q", e[:8])[0]] not in keys] + extra
        path = os.path.join(tmp, "h.gguf")
        write_raw_gguf(path, kv, tensors, offsets)
        run(binary, name, ["infer", "--model", path, "--format", "json"], rc, msg)
    # Tensors past the end of the data: the file cut short.
    path = os.path.join(tmp, "past.gguf")
    write_raw_gguf(path, kvs, tensors)
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) - 64)
    run(binary, "tensor past the end", ["infer", "--model", path], 3, "past the end")

    # A split GGUF whose second part comes from another model (another split.count, or the same tensors again).
    d = os.path.join(tmp, "split")
    os.makedirs(d)
    full = dict(meta, **{"split.count": 2, "split.tensors.count": 3})
    write_gguf(os.path.join(d, "m-00001-of-00002.gguf"), full, tensors[:2])
    write_gguf(os.path.join(d, "m-00002-of-00002.gguf"), {"split.count": 3, "split.tensors.count": 9}, tensors[2:])
    run(binary, "split part of another model", ["infer", "--model", os.path.join(d, "m-00001-of-00002.gguf")], 3, "split")
    write_gguf(os.path.join(d, "m-00002-of-00002.gguf"), {"split.count": 2}, tensors[:1])
    run(binary, "split part repeating a tensor", ["infer", "--model", os.path.join(d, "m-00001-of-00002.gguf")], 3,
        "two parts")
    write_gguf(os.path.join(d, "m-00002-of-00002.gguf"), {"split.count": 2}, [])
    run(binary, "split parts short of the count", ["infer", "--model", os.path.join(d, "m-00001-of-00002.gguf")], 3,
        "split.tensors.count")


def gguf_array(key, values, vtype=4):
    """A GGUF array of u32 (type 4) or bool (type 7) entries."""
    fmt = "B" if vtype == 7 else "I"
    return gguf_string(key) + struct.pack("<IIQ", 9, vtype, len(values)) + struct.pack(f"<{len(values)}{fmt}", *values)


def gemma4_kvs():
    """A 4-layer Gemma 4 as convert_hf_to_gguf.py writes one: sliding layers listed, global vs sliding head_dim,
    the last layer reading shared KV, per-layer inputs."""
    return [gguf_kv("general.architecture", "gemma4"), gguf_kv("gemma4.block_count", 4),
            gguf_kv("gemma4.embedding_length", 64), gguf_array("gemma4.feed_forward_length", [128, 128, 128, 256]),
            gguf_kv("gemma4.attention.head_count", 2), gguf_array("gemma4.attention.head_count_kv", [1, 1, 1, 1]),
            gguf_kv("gemma4.attention.key_length", 64), gguf_kv("gemma4.attention.value_length", 64),
            gguf_kv("gemma4.attention.key_length_swa", 32), gguf_kv("gemma4.attention.value_length_swa", 32),
            gguf_kv("gemma4.attention.sliding_window", 16),
            gguf_array("gemma4.attention.sliding_window_pattern", [1, 1, 1, 0], 7),
            gguf_kv("gemma4.attention.shared_kv_layers", 1), gguf_kv("gemma4.embedding_length_per_layer_input", 8),
            gguf_kv("gemma4.final_logit_softcapping", 30.0), gguf_kv("gemma4.context_length", 4096)]


def gguf_gemma4(binary, tmp):
    tensors = [("token_embd.weight", "F16", [64, 100]), ("per_layer_token_embd.weight", "F16", [32, 100])]
    tensors += [(f"blk.{l}.attn_norm.weight", "F32", [64]) for l in range(4)]
    path = os.path.join(tmp, "gemma4.gguf")
    write_raw_gguf(path, gemma4_kvs(), tensors)
    run(binary, "a valid small Gemma 4 GGUF", ["infer", "--model", path, "--profile", "llama.cpp", "--format", "json"], 0)
    for name, extra, msg in (
            ("gemma4 pattern of 2 for 4 layers", [gguf_array("gemma4.attention.sliding_window_pattern", [1, 0], 7)],
             "sliding_window_pattern"),
            ("gemma4 head_count_kv of 5 for 4 layers", [gguf_array("gemma4.attention.head_count_kv", [1] * 5)],
             "head_count_kv"),
            ("gemma4 head_count_kv as strings", [gguf_kv("gemma4.attention.head_count_kv", ["1", "1", "1", "1"])],
             "head_count_kv"),
            ("gemma4 shared_kv_layers past block_count", [gguf_kv("gemma4.attention.shared_kv_layers", 5)],
             "shared_kv_layers"),
            ("gemma4 value_length apart from key_length", [gguf_kv("gemma4.attention.value_length", 32)],
             "value_length"),
            ("gemma4 feed_forward_length 2^32-1", [gguf_array("gemma4.feed_forward_length", [128, 128, 128, 2**32 - 1])],
             "outside"),
            ("gemma4 no key_length_swa", [gguf_kv("gemma4.attention.key_length_swa", "32")], "key_length_swa")):
        keys = {e[8:8 + struct.unpack("<Q", e[:8])[0]] for e in extra}
        kv = [e for e in gemma4_kvs() if e[8:8 + struct.unpack("<Q", e[:8])[0]] not in keys] + extra
        write_raw_gguf(path, kv, tensors)
        run(binary, name, ["infer", "--model", path, "--format", "json"], 3, msg)


def hf_cache_escapes(binary, tmp):
    """org/name@revision resolves refs and snapshots inside the cache, or not at all."""
    root = os.path.join(tmp, "hfcache")
    src = os.path.join(tmp, "cache-src")
    write_folder(src, SMALL, [(n, "BF16", s) for n, s in llama_tensors(SMALL)], 1)
    commit = "0e9e39f249a16976918f6564b8830bc894c89659"
    hf_cache(root, "org/model", src, commit)
    secret = write(os.path.join(tmp, "secret"), commit)
    env = dict(os.environ, HF_HUB_CACHE=root, HF_HUB_OFFLINE="1", XDG_CACHE_HOME=os.path.join(tmp, "xdg"))
    base = os.path.join(root, "models--org--model")

    def hub_run(name, model, rc, msg):
        p = subprocess.run([binary, "infer", "--model", model], capture_output=True, timeout=30, env=env)
        err = p.stderr.decode("utf-8", "replace")
        check(name, p.returncode == rc and msg in err and (rc == 0 or err.count("\n") == 1), (p.returncode, err))

    hub_run("cache: main", "org/model", 0, "")
    for rev in ("/" + secret.lstrip("/"), ".", "..", "a/../../b", "refs//main", "main/"):
        hub_run(f"cache: revision {rev!r}", f"org/model@{rev}", 2, "unknown model")
    for repo in ("t--a/b", "t/a--b", "t/a.", "t/..", "-t/a"):
        hub_run(f"cache: repo {repo!r}", repo, 2, "unknown model")
    os.symlink(secret, os.path.join(base, "refs", "outside"))
    hub_run("cache: ref symlinked outside", "org/model@outside", 3, "refs/")
    os.symlink("looping", os.path.join(base, "refs", "looping"))
    hub_run("cache: ref symlink loop", "org/model@looping", 3, "symbolic links")
    os.makedirs(os.path.join(base, "refs", "dir"))
    hub_run("cache: ref is a folder", "org/model@dir", 3, "refs/")


def main():
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        for suite in (configs, files, safetensors, gguf, gguf_gemma4, hf_cache_escapes):
            d = os.path.join(tmp, suite.__name__)
            os.makedirs(d)
            suite(binary, d)
    if failures:
        print("\n".join(failures))
        return 1
    print("ok: hostile configs, safetensors, GGUF and HF cache: bounded, one line, exit 0/2/3, nothing forged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
