#!/usr/bin/env python3
"""gpuplan reads models where users keep them: folders, the Hugging Face cache, GGUF files (whole and split).
Expected values are independent of gpuplan: published parameter counts, Hub file sizes, and the buffer sizes
llama.cpp printed loading the same GGUF (see CASES' sources). Bad inputs get exit status 3 and one line.

usage: test_sources.py GPUPLAN FIXTUREDIR   (FIXTUREDIR from make_fixtures.py)
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

MIB, GIB = 2**20, 2**30
failures = []


def run(binary, args, env=None):
    e = dict(os.environ, HF_HUB_OFFLINE="1", **(env or {}))  # the cache paths only: never the network
    p = subprocess.run([binary] + args, capture_output=True, text=True, env=e, timeout=60)
    return p.returncode, p.stdout, p.stderr


def infer_json(binary, model, *extra, env=None):
    rc, out, err = run(binary, ["infer", "--model", model, "--format", "json", *extra], env)
    if rc != 0:
        raise AssertionError(f"{model}: exit {rc}: {err.strip()}")
    return json.loads(out)


def check(name, cond, detail=""):
    if not cond:
        failures.append(f"{name}: {detail}")


def close(a, b, rel):
    return abs(a - b) <= rel * abs(b)


def good_sources(binary, fx):
    # Llama 3.1 8B in BF16: 8,030,261,248 parameters (model card), 2 bytes each.
    r = infer_json(binary, f"{fx}/Llama-3.1-8B-Instruct")
    c = r["model"]["source"]["checkpoint"]
    check("folder bytes", c["language_model_bytes"] == 16_060_522_496, c["language_model_bytes"])
    check("folder params", c["language_model_params"] == 8_030_261_248, c["language_model_params"])
    check("folder weights used", r["memory"]["weight_bytes"] == 16_060_522_496, r["memory"]["weight_bytes"])
    check("folder name", r["model"]["name"] == "Llama-3.1-8B-Instruct", r["model"]["name"])
    import jsonschema  # python3-jsonschema, installed by tools/bootstrap.sh
    schema = json.loads(run(binary, ["schema", "infer"])[1])
    for path in (f"{fx}/Llama-3.1-8B-Instruct", f"{fx}/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"):
        jsonschema.validate(infer_json(binary, path), schema)
    rc, out, _ = run(binary, ["train", "--model", f"{fx}/Llama-3.1-8B-Instruct", "--lora-rank", "16", "--format", "json"])
    jsonschema.validate(json.loads(out), json.loads(run(binary, ["schema", "train"])[1]))
    check("train from a folder", rc == 0 and json.loads(out)["model"]["source"]["kind"] == "folder", rc)

    # The Hugging Face cache: HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub; refs/main → the snapshot.
    hub = f"{fx}/hub"
    home = tempfile.mkdtemp()
    os.makedirs(f"{home}/.cache/huggingface")
    os.symlink(hub, f"{home}/.cache/huggingface/hub")
    for env in ({"HF_HUB_CACHE": hub}, {"HF_HOME": os.path.dirname(hub) + "/hfhome"}, {"HOME": home}):
        if "HF_HOME" in env:
            os.makedirs(env["HF_HOME"], exist_ok=True)
            if not os.path.exists(env["HF_HOME"] + "/hub"):
                os.symlink(hub, env["HF_HOME"] + "/hub")
        clean = {k: "" for k in ("HF_HUB_CACHE", "HF_HOME")}
        r = infer_json(binary, "meta-llama/Llama-3.1-8B-Instruct", env=dict(clean, **env))
        s = r["model"]["source"]
        check(f"cache {env}", s["kind"] == "hf-cache" and "0e9e39f249a1" in s["revision"], s)
        check(f"cache bytes {env}", s["checkpoint"]["language_model_bytes"] == 16_060_522_496, s)
    commit = "0e9e39f249a16976918f6564b8830bc894c89659"
    r = infer_json(binary, f"meta-llama/Llama-3.1-8B-Instruct@{commit}", env={"HF_HUB_CACHE": hub})
    check("cache by commit", r["model"]["source"]["kind"] == "hf-cache", r["model"]["source"])

    # Meta-Llama-3.1-8B-Instruct Q4_K_M: llama.cpp printed "model size = 4.58 GiB", "CPU model buffer size =
    # 281.81 MiB" (token_embd stays on the host) and "CUDA0 model buffer size = 4403.49 MiB" with all 33 layers
    # offloaded; 292 tensors (f32 66, q4_K 193, q6_K 33). Source: an Ollama server log of this file, in the
    # public code index (also abetlen/llama-cpp-python#1693 for the tensor types).
    for path in (f"{fx}/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", f"{fx}/split/Llama-Q4_K_M-00001-of-00002.gguf"):
        r = infer_json(binary, path, "--profile", "llama.cpp")
        c = r["model"]["source"]["checkpoint"]
        check(f"gguf size {path}", round(c["language_model_bytes"] / GIB, 2) == 4.58, c["language_model_bytes"] / GIB)
        check(f"gguf tensors {path}", c["tensors"] == 292, c["tensors"])
        check(f"gguf host {path}", round(r["serving"]["host_memory_bytes"] / MIB, 2) == 281.81,
              r["serving"]["host_memory_bytes"] / MIB)
        gpu_w = r["memory"]["weight_bytes"] - r["serving"]["host_memory_bytes"]
        check(f"gguf gpu {path}", round(gpu_w / MIB, 2) == 4403.49, gpu_w / MIB)
        check(f"gguf shape {path}", not r["model"]["tied_embeddings"] and r["model"]["num_kv_heads"] == 8, r["model"])

    # hugging-quants/Meta-Llama-3.1-8B-Instruct-GPTQ-INT4: 5.73 GB on the Hub (4-bit layers, fp16 embedding/head).
    r = infer_json(binary, f"{fx}/Llama-3.1-8B-Instruct-GPTQ-INT4")
    c = r["model"]["source"]["checkpoint"]
    check("gptq bytes", close(c["language_model_bytes"], 5.73e9, 0.01), c["language_model_bytes"])
    check("gptq params", c["language_model_params"] == 8_030_261_248, c["language_model_params"])
    check("gptq format", r["workload"]["weights"] == "gptq-int4", r["workload"]["weights"])

    # A multimodal wrapper: the language model estimated, the vision tower and projector reported beside it.
    r = infer_json(binary, f"{fx}/Mistral-3-mini")
    s = r["model"]["source"]
    check("multimodal parts", set(s["checkpoint"]["other_parts"]) == {"vision_tower", "multi_modal_projector"}, s)
    check("multimodal note", any("vision_tower" in n for n in s["notes"]), s["notes"])

    # Qwen3-30B-A3B with transformers 5's num_local_experts: 30.5B total, 3.3B active (model card).
    r = infer_json(binary, f"{fx}/Qwen3-30B-A3B-tf5")
    check("qwen3 moe total", close(r["model"]["params"], 30.5e9, 0.005), r["model"]["params"])
    check("qwen3 moe active", close(r["model"]["active_params"], 3.3e9, 0.02), r["model"]["active_params"])


def safetensors_bytes(header, data=0, length=None):
    blob = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(blob) if length is None else length) + blob + b"\0" * data


def bad_sources(binary, fx):
    d = tempfile.mkdtemp()
    config = json.load(open(f"{fx}/Llama-3.1-8B-Instruct/config.json"))
    t = {"model.norm.weight": {"dtype": "BF16", "shape": [4096], "data_offsets": [0, 8192]}}
    cases = {
        "truncated": (safetensors_bytes(t, data=100), "past the end"),
        "header_over_limit": (safetensors_bytes(b"{}", length=200_000_000), "100 MB"),
        "header_short": (safetensors_bytes(b"{}", length=5000), "truncated"),
        "malformed_header": (safetensors_bytes(b"{not json"), "not a JSON object"),
        "bad_dtype": (safetensors_bytes({"x": {"dtype": "Q9", "shape": [2], "data_offsets": [0, 2]}}, 2),
                      "unknown dtype"),
        "shape_mismatch": (safetensors_bytes({"x": {"dtype": "F32", "shape": [4], "data_offsets": [0, 8]}}, 8),
                           "do not hold its shape"),
        "tiny": (b"\x01\x02", "shorter than 8 bytes"),
    }
    for name, (data, message) in cases.items():
        folder = f"{d}/{name}"
        os.makedirs(folder)
        json.dump(config, open(f"{folder}/config.json", "w"))
        open(f"{folder}/model.safetensors", "wb").write(data)
        rc, out, err = run(binary, ["infer", "--model", folder])
        check(f"bad {name}", rc == 3 and message in err and err.count("\n") == 1, (rc, err))
    os.makedirs(f"{d}/index_missing")
    json.dump(config, open(f"{d}/index_missing/config.json", "w"))
    json.dump({"weight_map": {"a": "model-00001-of-00002.safetensors"}},
              open(f"{d}/index_missing/model.safetensors.index.json", "w"))
    json.dump({"weight_map": {"a": "../escape.safetensors"}}, open(f"{d}/escape.json", "w"))
    os.makedirs(f"{d}/index_escape")
    json.dump(config, open(f"{d}/index_escape/config.json", "w"))
    os.replace(f"{d}/escape.json", f"{d}/index_escape/model.safetensors.index.json")
    os.makedirs(f"{d}/no_config")
    gguf = open(f"{fx}/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "rb").read(1 << 20)
    open(f"{d}/bad_magic.gguf", "wb").write(b"GGUX" + gguf[4:4096])
    open(f"{d}/truncated.gguf", "wb").write(gguf[:100_000])
    open(f"{d}/version9.gguf", "wb").write(b"GGUF" + struct.pack("<I", 9) + gguf[8:4096])
    open(f"{d}/part-00001-of-00002.gguf", "wb").write(gguf[:4096])
    for model, rc_want, message in [
            (f"{d}/index_missing", 3, "missing"), (f"{d}/index_escape", 3, "outside the folder"),
            (f"{d}/no_config", 3, "no config.json"), (f"{d}/bad_magic.gguf", 3, "bad magic"),
            (f"{d}/truncated.gguf", 3, "truncated"), (f"{d}/version9.gguf", 3, "version 9"),
            (f"{d}/part-00001-of-00002.gguf", 3, "missing"),
            ("meta-llama/Llama-3.1-8B-Instruct@v9", 3, "not in the local Hugging Face cache"),
            ("no such model", 2, "unknown model")]:
        rc, out, err = run(binary, ["infer", "--model", model], {"HF_HUB_CACHE": f"{fx}/hub"})
        check(f"bad {model}", rc == rc_want and message in err and err.count("\n") == 1, (rc, err))


def main():
    binary, fx = sys.argv[1], sys.argv[2]
    good_sources(binary, fx)
    bad_sources(binary, fx)
    for f in failures:
        print("FAIL", f)
    print(f"{'ok' if not failures else 'FAILED'}: model sources ({len(failures)} failures)")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
