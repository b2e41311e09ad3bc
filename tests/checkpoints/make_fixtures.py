#!/usr/bin/env python3
"""Writes model checkpoints as users have them, with real tensor names, shapes and dtypes but sparse (all-zero,
unallocated) data, so a 16 GB folder costs a few MB of disk: a Hugging Face folder (sharded safetensors + index),
the same model in a Hugging Face cache layout, a GPTQ folder, a multimodal folder, a Qwen3-MoE folder whose
config uses transformers 5's field names, a GGUF Q4_K_M file and the same file split in two.

Independent of gpuplan: tensor lists follow the HF and llama.cpp naming of Llama 3.1 8B; ggml block sizes are from
ggml-common.h; Q4_K_M's per-tensor types follow llama.cpp's llama_tensor_get_type (use_more_bits).

usage: make_fixtures.py OUTDIR
"""
import json
import os
import shutil
import struct
import sys

LLAMA_8B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "vocab_size": 128256, "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
    "rope_theta": 500000.0, "torch_dtype": "bfloat16", "hidden_act": "silu",
}
DT_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "I32": 4, "U8": 1, "F8_E4M3": 1}


def llama_tensors(c, prefix="model."):
    """(name, shape) of an HF Llama checkpoint, in file order."""
    h, i, v, L = c["hidden_size"], c["intermediate_size"], c["vocab_size"], c["num_hidden_layers"]
    q, kv = c["num_attention_heads"] * c["head_dim"], c["num_key_value_heads"] * c["head_dim"]
    out = [(prefix + "embed_tokens.weight", [v, h])]
    for l in range(L):
        p = f"{prefix}layers.{l}."
        out += [(p + "self_attn.q_proj.weight", [q, h]), (p + "self_attn.k_proj.weight", [kv, h]),
                (p + "self_attn.v_proj.weight", [kv, h]), (p + "self_attn.o_proj.weight", [h, q]),
                (p + "mlp.gate_proj.weight", [i, h]), (p + "mlp.up_proj.weight", [i, h]),
                (p + "mlp.down_proj.weight", [h, i]), (p + "input_layernorm.weight", [h]),
                (p + "post_attention_layernorm.weight", [h])]
    out += [(prefix + "norm.weight", [h]), ("lm_head.weight", [v, h])]
    return out


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def write_safetensors(path, tensors):
    """tensors: (name, dtype, shape); data left sparse."""
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name, dt, shape in tensors:
        n = numel(shape) * DT_BYTES[dt]
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        f.truncate(8 + len(blob) + off)
    return off


def write_folder(d, config, tensors, shards):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    per = (len(tensors) + shards - 1) // shards
    weight_map, total = {}, 0
    for s in range(shards):
        name = f"model-{s + 1:05d}-of-{shards:05d}.safetensors" if shards > 1 else "model.safetensors"
        part = tensors[s * per:(s + 1) * per]
        total += write_safetensors(os.path.join(d, name), part)
        weight_map.update({t[0]: name for t in part})
    if shards > 1:
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f)
    return total


def hf_cache(root, repo, src, commit):
    """huggingface_hub's layout: blobs/<etag>, snapshots/<commit>/<file> → ../../blobs/<etag>, refs/main."""
    base = os.path.join(root, "models--" + repo.replace("/", "--"))
    os.makedirs(os.path.join(base, "blobs"), exist_ok=True)
    os.makedirs(os.path.join(base, "refs"), exist_ok=True)
    snap = os.path.join(base, "snapshots", commit)
    os.makedirs(snap, exist_ok=True)
    for k, name in enumerate(sorted(os.listdir(src))):
        blob = os.path.join(base, "blobs", f"{k:064x}")
        os.replace(os.path.join(src, name), blob)
        os.symlink(os.path.join("..", "..", "blobs", f"{k:064x}"), os.path.join(snap, name))
    os.rmdir(src)
    with open(os.path.join(base, "refs", "main"), "w") as f:
        f.write(commit)


# ggml types: (id, weights per block, bytes per block) from ggml-common.h.
GGML = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_K": (12, 256, 144), "Q6_K": (14, 256, 210)}


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_kv(key, value):
    if isinstance(value, str):
        return gguf_string(key) + struct.pack("<I", 8) + gguf_string(value)
    if isinstance(value, float):
        return gguf_string(key) + struct.pack("<If", 6, value)
    if isinstance(value, list):  # array of strings
        return gguf_string(key) + struct.pack("<IIQ", 9, 8, len(value)) + b"".join(gguf_string(s) for s in value)
    return gguf_string(key) + struct.pack("<II", 4, value)


def write_gguf(path, metadata, tensors):
    """tensors: (name, ggml type, ggml shape: fastest dimension first)."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata))
    head += b"".join(gguf_kv(k, v) for k, v in metadata.items())
    off = 0
    for name, t, shape in tensors:
        tid, block, size = GGML[t]
        head += gguf_string(name) + struct.pack("<I", len(shape)) + struct.pack(f"<{len(shape)}Q", *shape)
        head += struct.pack("<IQ", tid, off)
        off += (numel(shape) // block * size + 31) // 32 * 32
    pad = -len(head) % 32
    with open(path, "wb") as f:
        f.write(head + b"\0" * pad)
        f.truncate(len(head) + pad + off)


def use_more_bits(i, n):  # llama.cpp src/llama-quant.cpp
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def llama_q4_k_m(c):
    h, i, v, L = c["hidden_size"], c["intermediate_size"], c["vocab_size"], c["num_hidden_layers"]
    kv = c["num_key_value_heads"] * c["head_dim"]
    t = [("rope_freqs.weight", "F32", [64]), ("token_embd.weight", "Q4_K", [h, v])]
    for l in range(L):
        more = "Q6_K" if use_more_bits(l, L) else "Q4_K"
        p = f"blk.{l}."
        t += [(p + "attn_norm.weight", "F32", [h]), (p + "attn_q.weight", "Q4_K", [h, h]),
              (p + "attn_k.weight", "Q4_K", [h, kv]), (p + "attn_v.weight", more, [h, kv]),
              (p + "attn_output.weight", "Q4_K", [h, h]), (p + "ffn_norm.weight", "F32", [h]),
              (p + "ffn_gate.weight", "Q4_K", [h, i]), (p + "ffn_up.weight", "Q4_K", [h, i]),
              (p + "ffn_down.weight", more, [i, h])]
    t += [("output_norm.weight", "F32", [h]), ("output.weight", "Q6_K", [h, v])]
    return t


def llama_gguf_metadata(c):
    a = "llama"
    return {"general.architecture": a, "general.name": "Meta Llama 3.1 8B Instruct", "general.file_type": 15,
            f"{a}.block_count": c["num_hidden_layers"], f"{a}.context_length": c["max_position_embeddings"],
            f"{a}.embedding_length": c["hidden_size"], f"{a}.feed_forward_length": c["intermediate_size"],
            f"{a}.attention.head_count": c["num_attention_heads"],
            f"{a}.attention.head_count_kv": c["num_key_value_heads"], f"{a}.rope.freq_base": 500000.0,
            f"{a}.vocab_size": c["vocab_size"], f"{a}.rope.dimension_count": 128,
            "tokenizer.ggml.tokens": [f"t{k}" for k in range(c["vocab_size"])]}


def gptq(c):
    """Meta-Llama-3.1-8B-Instruct-GPTQ-INT4 layout (AutoGPTQ, desc_act false, group 128, sym)."""
    cfg = dict(c, torch_dtype="float16", quantization_config={"quant_method": "gptq", "bits": 4, "group_size": 128})
    t = []
    for name, shape in llama_tensors(c):
        if ".layers." in name and name.endswith("proj.weight"):
            base, (out, inp) = name[:-len(".weight")], shape
            t += [(base + ".qweight", "I32", [inp // 8, out]), (base + ".qzeros", "I32", [inp // 128, out // 8]),
                  (base + ".scales", "F16", [inp // 128, out]), (base + ".g_idx", "I32", [inp])]
        else:
            t.append((name, "F16", shape))
    return cfg, t


def multimodal():
    """A Mistral-3-style wrapper: the language model under text_config, a vision tower and projector beside it."""
    text = dict(LLAMA_8B, model_type="mistral", num_hidden_layers=4, vocab_size=32768, head_dim=128)
    cfg = {"model_type": "mistral3", "architectures": ["Mistral3ForConditionalGeneration"], "text_config": text,
           "vision_config": {"model_type": "pixtral", "hidden_size": 1024, "num_hidden_layers": 2}}
    t = [(n.replace("model.", "model.language_model.", 1) if n.startswith("model.") else n, "BF16", s)
         for n, s in llama_tensors(text)]
    for l in range(2):
        t += [(f"model.vision_tower.transformer.layers.{l}.attention.q_proj.weight", "BF16", [1024, 1024]),
              (f"model.vision_tower.transformer.layers.{l}.feed_forward.up_proj.weight", "BF16", [4096, 1024])]
    t.append(("model.multi_modal_projector.linear_1.weight", "BF16", [4096, 1024]))
    return cfg, t


def qwen3_moe_tf5():
    """Qwen3-30B-A3B's shape, with the expert count under transformers 5's name (num_local_experts)."""
    c = {"model_type": "qwen3_moe", "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
         "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
         "vocab_size": 151936, "num_local_experts": 128, "num_experts_per_tok": 8, "max_position_embeddings": 40960,
         "tie_word_embeddings": False, "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"}}
    return c


def main(out):
    shutil.rmtree(out, ignore_errors=True)  # a fresh set each run: the cache layout moves files into blobs/
    os.makedirs(out)
    total = write_folder(os.path.join(out, "Llama-3.1-8B-Instruct"), LLAMA_8B,
                         [(n, "BF16", s) for n, s in llama_tensors(LLAMA_8B)], 4)
    assert total == 8_030_261_248 * 2
    write_folder(os.path.join(out, "cache-src"), LLAMA_8B, [(n, "BF16", s) for n, s in llama_tensors(LLAMA_8B)], 4)
    hf_cache(os.path.join(out, "hub"), "meta-llama/Llama-3.1-8B-Instruct", os.path.join(out, "cache-src"),
             "0e9e39f249a16976918f6564b8830bc894c89659")
    cfg, t = gptq(LLAMA_8B)
    write_folder(os.path.join(out, "Llama-3.1-8B-Instruct-GPTQ-INT4"), cfg, t, 2)
    cfg, t = multimodal()
    write_folder(os.path.join(out, "Mistral-3-mini"), cfg, t, 1)
    os.makedirs(os.path.join(out, "Qwen3-30B-A3B-tf5"), exist_ok=True)
    with open(os.path.join(out, "Qwen3-30B-A3B-tf5", "config.json"), "w") as f:
        json.dump(qwen3_moe_tf5(), f)
    meta, tensors = llama_gguf_metadata(LLAMA_8B), llama_q4_k_m(LLAMA_8B)
    write_gguf(os.path.join(out, "Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"), meta, tensors)
    os.makedirs(os.path.join(out, "split"), exist_ok=True)
    half = len(tensors) // 2
    split = {"split.count": 2, "split.tensors.count": len(tensors)}
    write_gguf(os.path.join(out, "split", "Llama-Q4_K_M-00001-of-00002.gguf"), dict(meta, **split), tensors[:half])
    write_gguf(os.path.join(out, "split", "Llama-Q4_K_M-00002-of-00002.gguf"), split, tensors[half:])


if __name__ == "__main__":
    main(sys.argv[1])
