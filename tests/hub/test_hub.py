#!/usr/bin/env python3
"""gpuplan fetches models from the Hub: config.json, the index and each safetensors header (HTTP Range), never the
weights; caches them; honours HF_ENDPOINT, HF_TOKEN / --hf-token and HF_HUB_OFFLINE; and fails with one line and
exit status 3 on 401, 404, an unreachable endpoint and a hostile header.

A real HTTP server on loopback (port 0) serves a Hub-like tree: /{org}/{name}/resolve/{rev}/{file}, safetensors
redirected (302) to a /cdn/ path as the Hub does, Range requests answered 206 with Content-Range; a gated repo
answers 401 without the token. The server counts the bytes it sends.

usage: test_hub.py GPUPLAN FIXTUREDIR   (FIXTUREDIR from tests/checkpoints/make_fixtures.py)
"""
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "checkpoints"))
from make_fixtures import write_folder  # noqa: E402

TOKEN = "hf_test_secret_7c1f"
failures = []
served = {"bytes": 0, "safetensors_bytes": 0, "requests": 0, "auth_to_cdn": 0, "cdn_requests": 0, "paths": []}


def check(name, cond, detail=""):
    if not cond:
        failures.append(f"{name}: {detail}")


def gpt_oss_20b(root):
    """openai/gpt-oss-20b as published: bf16 attention, router and embeddings, MXFP4 experts (U8 blocks of 32 fp4
    values + one U8 scale per block), expert biases in bf16, three shards."""
    h, inter, E, L, V, heads, kv, hd = 2880, 2880, 32, 24, 201088, 64, 8, 64
    t = [("model.embed_tokens.weight", "BF16", [V, h])]
    for l in range(L):
        p = f"model.layers.{l}."
        t += [(p + "input_layernorm.weight", "BF16", [h]), (p + "post_attention_layernorm.weight", "BF16", [h]),
              (p + "self_attn.q_proj.weight", "BF16", [heads * hd, h]), (p + "self_attn.q_proj.bias", "BF16", [heads * hd]),
              (p + "self_attn.k_proj.weight", "BF16", [kv * hd, h]), (p + "self_attn.k_proj.bias", "BF16", [kv * hd]),
              (p + "self_attn.v_proj.weight", "BF16", [kv * hd, h]), (p + "self_attn.v_proj.bias", "BF16", [kv * hd]),
              (p + "self_attn.o_proj.weight", "BF16", [h, heads * hd]), (p + "self_attn.o_proj.bias", "BF16", [h]),
              (p + "self_attn.sinks", "BF16", [heads]),
              (p + "mlp.router.weight", "BF16", [E, h]), (p + "mlp.router.bias", "BF16", [E]),
              (p + "mlp.experts.gate_up_proj_blocks", "U8", [E, 2 * inter, h // 32, 16]),
              (p + "mlp.experts.gate_up_proj_scales", "U8", [E, 2 * inter, h // 32]),
              (p + "mlp.experts.gate_up_proj_bias", "BF16", [E, 2 * inter]),
              (p + "mlp.experts.down_proj_blocks", "U8", [E, h, inter // 32, 16]),
              (p + "mlp.experts.down_proj_scales", "U8", [E, h, inter // 32]),
              (p + "mlp.experts.down_proj_bias", "BF16", [E, h])]
    t += [("model.norm.weight", "BF16", [h]), ("lm_head.weight", "BF16", [V, h])]
    cfg = {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "vocab_size": V, "hidden_size": h,
           "intermediate_size": inter, "num_hidden_layers": L, "num_attention_heads": heads, "num_key_value_heads": kv,
           "head_dim": hd, "num_local_experts": E, "num_experts_per_tok": 4, "experts_per_token": 4,
           "sliding_window": 128, "layer_types": ["sliding_attention", "full_attention"] * (L // 2),
           "attention_bias": True, "tie_word_embeddings": False, "max_position_embeddings": 131072,
           "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096},
           "rope_theta": 150000, "quantization_config": {"quant_method": "mxfp4",
                                                         "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}}
    return write_folder(os.path.join(root, "openai", "gpt-oss-20b"), cfg, t, 3)


def qwen3_30b_a3b(root, fx):
    """Config only (as in a repo whose weights this test does not need): resolve answers 404 for the rest."""
    d = os.path.join(root, "Qwen", "Qwen3-30B-A3B")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(fx, "Qwen3-30B-A3B-tf5", "config.json")) as src, open(os.path.join(d, "config.json"), "w") as f:
        f.write(src.read())


def hostile(root):
    d = os.path.join(root, "evil", "huge-header")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(root, "openai", "gpt-oss-20b", "config.json")) as src, open(os.path.join(d, "config.json"), "w") as f:
        f.write(src.read())
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write((1 << 40).to_bytes(8, "little"))  # a 1 TiB header: refused before anything is allocated
        f.truncate(1 << 20)
    # A server that ignores Range and sends the whole 1 MiB file: the client stops reading past its bound.
    d = os.path.join(root, "evil", "no-range")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(root, "openai", "gpt-oss-20b", "config.json")) as src, open(os.path.join(d, "config.json"), "w") as f:
        f.write(src.read())
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write((100).to_bytes(8, "little"))
        f.truncate(1 << 20)


def odd_and_many(root):
    """A shard whose name needs percent-encoding, and an index that names 5,000 shards."""
    src = os.path.join(root, "openai", "gpt-oss-20b")
    d = os.path.join(root, "odd", "names")
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(src, "config.json"), d)
    index = json.load(open(os.path.join(src, "model.safetensors.index.json")))
    renamed = {f: f"weights #{k} ?&%.safetensors" for k, f in enumerate(sorted(set(index["weight_map"].values())))}
    for f, new in renamed.items():
        os.link(os.path.join(src, f), os.path.join(d, new))
    index["weight_map"] = {t: renamed[f] for t, f in index["weight_map"].items()}
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f)
    d = os.path.join(root, "evil", "many-shards")
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(src, "config.json"), d)
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"weight_map": {f"t{k}": f"s{k}.safetensors" for k in range(5000)}}, f)


def serve(root, gated):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def send_file(self, path):
            size = os.path.getsize(path)
            rng = self.headers.get("Range")
            start, end, status = 0, size - 1, 200
            if rng and "no-range" not in path:
                m = re.fullmatch(r"bytes=(\d+)-(\d+)", rng)
                start, end, status = int(m[1]), min(int(m[2]), size - 1), 206
            n = end - start + 1
            if not rng and size > 64 << 20:  # the client must never ask for a whole weights file
                self.send_response(500)
                self.end_headers()
                return
            self.send_response(status)
            if "no-range" not in path:  # else no length: the client's own bound must stop it, not curl's --max-filesize
                self.send_header("Content-Length", str(n))
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            self.end_headers()
            with open(path, "rb") as f:
                f.seek(start)
                data = f.read(n)
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client stopped reading (range ignored)
                return
            served["bytes"] += len(data)
            if path.endswith(".safetensors"):
                served["safetensors_bytes"] += len(data)

        def trickle(self):
            """64 MiB announced, 4 KiB a second: above curl's stall rule, for hours."""
            self.send_response(200)
            self.send_header("Content-Length", str(64 << 20))
            self.end_headers()
            try:
                for _ in range(120):
                    self.wfile.write(b" " * 4096)
                    self.wfile.flush()
                    time.sleep(1)
            except (BrokenPipeError, ConnectionResetError):
                return

        def do_GET(self):
            served["requests"] += 1
            parts = self.path.split("/")
            if parts[1] == "cdn":  # /cdn/{org}/{name}/{file}
                served["cdn_requests"] += 1
                if self.headers.get("Authorization"):
                    served["auth_to_cdn"] += 1
                path = os.path.join(root, *[urllib.parse.unquote(p) for p in parts[2:]])
                return self.send_file(path) if os.path.isfile(path) else self.send_error(404)
            m = re.fullmatch(r"/([^/]+)/([^/]+)/resolve/([^/]+)/([^/]+)", self.path)
            if not m:
                return self.send_error(404)
            org, name, rev, file = (urllib.parse.unquote(g) for g in m.groups())
            served["paths"].append(self.path)
            if org == "evil" and name == "trickle":
                return self.trickle()
            if f"{org}/{name}" in gated and self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self.send_error(401)
            path = os.path.join(root, org, name, file)
            if rev != "main" or not os.path.isfile(path):
                return self.send_error(404)
            if file.endswith(".safetensors") and org != "evil":  # the Hub redirects weights to its CDN, another host
                self.send_response(302)
                self.send_header("Location", f"http://localhost:{self.server.server_address[1]}/cdn/{org}/{name}/"
                                             + urllib.parse.quote(file))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_file(path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run(binary, args, env):
    p = subprocess.run([binary] + args, capture_output=True, text=True, env=env, timeout=120)
    return p.returncode, p.stdout, p.stderr


def misbehaving(binary, env, tmp, endpoint):
    """A trickling server, names that would leave or share a cache folder, credentials in the endpoint, concurrent
    and repeated fetches, a refresh, odd file names and an index naming too many shards (issue #48)."""
    for name, extra, args in (("--hub-timeout", {}, ["--hub-timeout", "3"]),
                              ("GPUPLAN_HUB_TIMEOUT", {"GPUPLAN_HUB_TIMEOUT": "2"}, []),
                              ("GPUPLAN_HUB_REQUEST_TIMEOUT", {"GPUPLAN_HUB_REQUEST_TIMEOUT": "2"}, [])):
        start = time.monotonic()
        rc, out, err = run(binary, ["infer", "--model", "evil/trickle"] + args, dict(env, **extra))
        took = time.monotonic() - start
        check(f"trickle, {name} named", any(f in err for f in (f"({name}", f", {name})")), err)
        check(f"trickle, {name}: one line in time", rc == 3 and err.count("\n") == 1 and took < 10, (rc, err, took))

    # Revisions and names: usage errors, and the cached main survives them.
    rc, _, err = run(binary, ["infer", "--model", "Qwen/Qwen3-30B-A3B"], env)
    for model in ("Qwen/Qwen3-30B-A3B@.", "Qwen/Qwen3-30B-A3B@..", "Qwen/Qwen3-30B-A3B@/etc/hostname",
                  "Qwen/Qwen3-30B-A3B@a/./b", "t--a/b", "t/a--b"):
        rc, out, err = run(binary, ["infer", "--model", model], env)
        check(f"refused {model}", rc == 2 and "unknown model" in err and err.count("\n") == 1, (rc, err))
    rc, out, err = run(binary, ["infer", "--model", "Qwen/Qwen3-30B-A3B"], dict(env, HF_HUB_OFFLINE="1"))
    check("cached main kept", rc == 0, err)

    # Credentials in HF_ENDPOINT: refused, never printed, no folder named after them.
    with_pw = endpoint.replace("http://", "http://user:pw-secret@")
    rc, out, err = run(binary, ["infer", "--model", "Qwen/Qwen3-32B"], dict(env, HF_ENDPOINT=with_pw))
    check("userinfo refused", rc == 2 and "credentials" in err and "pw-secret" not in out + err, (rc, err))
    names = [n for _, dirs, files in os.walk(env["XDG_CACHE_HOME"]) for n in dirs + files]
    check("no secret in the cache", not any("pw-secret" in n for n in names), names[:5])
    key = urllib.parse.quote(endpoint, safe="")
    check("scheme in the cache key", key in os.listdir(os.path.join(env["XDG_CACHE_HOME"], "gpuplan", "hub")),
          os.listdir(os.path.join(env["XDG_CACHE_HOME"], "gpuplan", "hub")))
    for d, dirs, files in os.walk(os.path.join(env["XDG_CACHE_HOME"], "gpuplan", "hub", key)):
        for n in dirs:
            check("private folder", os.stat(os.path.join(d, n)).st_mode & 0o077 == 0, os.path.join(d, n))
        for n in files:
            check("private file", os.stat(os.path.join(d, n)).st_mode & 0o077 == 0, os.path.join(d, n))
    check("no staging left", not any(".partial-" in n or ".old-" in n for n in names), names)

    # Four runs at once on an empty cache: all succeed; one fetches, the others wait for it.
    fresh = dict(env, XDG_CACHE_HOME=os.path.join(tmp, "xdg-concurrent"))
    procs = [subprocess.Popen([binary, "infer", "--model", "openai/gpt-oss-20b"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=fresh) for _ in range(4)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    check("concurrent fetches", all(rc == 0 for rc, _ in results), results)

    # A cached branch is used until --refresh or GPUPLAN_HUB_MAX_AGE says to fetch it again.
    for name, extra, args, again in (("cached", {}, [], False), ("--refresh", {}, ["--refresh"], True),
                                     ("max age", {"GPUPLAN_HUB_MAX_AGE": "0.001"}, [], True)):
        before = served["requests"]
        rc, out, err = run(binary, ["infer", "--model", "openai/gpt-oss-20b"] + args, dict(fresh, **extra))
        check(f"refresh: {name}", rc == 0 and (served["requests"] > before) == again, (rc, err, served["requests"] - before))

    # curl's TLS failure is its "curl: (60)" line, not the advice it prints after it.
    fake = os.path.join(tmp, "tls-bin")
    os.makedirs(fake)
    with open(os.path.join(fake, "curl"), "w") as f:
        f.write("#!/bin/sh\ncat >&2 <<'EOF'\ncurl: (60) SSL certificate problem: self-signed certificate\n"
                "More details here: https://curl.se/docs/sslcerts.html\n\ncurl failed to verify the legitimacy of the "
                "server and therefore could not\nestablish a secure connection to it. To learn more about this situation "
                "and\nhow to fix it, please visit the web page mentioned above.\nEOF\nexit 60\n")
    os.chmod(os.path.join(fake, "curl"), 0o755)
    rc, out, err = run(binary, ["infer", "--model", "Qwen/Qwen3-32B"], dict(env, PATH=fake + os.pathsep + env["PATH"]))
    check("TLS failure", rc == 3 and "SSL certificate problem" in err and err.count("\n") == 1, (rc, err))

    # File names that need encoding reach the server as one segment each; too many shards are refused.
    rc, out, err = run(binary, ["infer", "--model", "odd/names", "--format", "json"], env)
    check("percent-encoded shard names", rc == 0 and any("%20%23" in p and "%3F%26%25" in p for p in served["paths"]),
          (rc, err, served["paths"][-3:]))
    rc, out, err = run(binary, ["infer", "--model", "evil/many-shards"], env)
    check("5000 shards", rc == 3 and "over 4096" in err, (rc, err))


def main():
    binary, fx = sys.argv[1], os.path.abspath(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "hub")
        gpt_oss_bytes = gpt_oss_20b(root)
        qwen3_30b_a3b(root, fx)
        hostile(root)
        odd_and_many(root)
        llama = os.path.join(root, "meta-llama", "Llama-3.1-8B-Instruct")
        os.makedirs(os.path.dirname(llama), exist_ok=True)
        os.symlink(os.path.join(fx, "Llama-3.1-8B-Instruct"), llama)
        server = serve(root, gated={"meta-llama/Llama-3.1-8B-Instruct"})
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        cache = os.path.join(tmp, "xdg")
        env = dict(os.environ, HF_ENDPOINT=endpoint, XDG_CACHE_HOME=cache, HF_HUB_CACHE=os.path.join(tmp, "empty"),
                   HF_TOKEN="", HF_HUB_OFFLINE="")

        # infer --model Qwen/Qwen3-30B-A3B: config from the Hub, no weights there to read.
        rc, out, err = run(binary, ["infer", "--model", "Qwen/Qwen3-30B-A3B", "--format", "json"], env)
        check("qwen3 from the hub", rc == 0, err)
        if rc == 0:
            j = json.loads(out)
            check("qwen3 source", j["model"]["source"]["kind"] == "hub", j["model"]["source"])
            check("qwen3 params", abs(j["model"]["params"] - 30.5e9) < 0.005 * 30.5e9, j["model"]["params"])

        # train --model openai/gpt-oss-20b --lora-rank 16: the MXFP4 checkpoint's headers, via the CDN redirect.
        rc, out, err = run(binary, ["train", "--model", "openai/gpt-oss-20b", "--lora-rank", "16", "--format", "json"], env)
        check("gpt-oss from the hub", rc == 0, err)
        if rc == 0:
            src = json.loads(out)["model"]["source"]
            ck = src.get("checkpoint", {})
            stored = ck.get("language_model_bytes", 0) + ck.get("other_bytes", 0)
            # The Hub lists gpt-oss-20b's three safetensors at 13.8 GB; here the same tensors' bytes.
            check("gpt-oss stored bytes", stored == gpt_oss_bytes and abs(stored - 13.8e9) < 0.01 * 13.8e9, (stored, gpt_oss_bytes))
            check("gpt-oss format", ck.get("quantization") == "mxfp4", ck)
        check("headers only", served["safetensors_bytes"] < 4 << 20, served)

        # A second run is answered from the cache, with the network off.
        before = served["requests"]
        offline = dict(env, HF_HUB_OFFLINE="1")
        rc, out, err = run(binary, ["train", "--model", "openai/gpt-oss-20b", "--lora-rank", "16", "--format", "json"], offline)
        check("offline from the cache", rc == 0 and served["requests"] == before, (rc, err, served["requests"] - before))
        rc, out, err = run(binary, ["infer", "--model", "nobody/never-fetched"], offline)
        check("offline, not cached", rc == 3 and "HF_HUB_OFFLINE" in err, (rc, err))

        # Gated: 401 without a token; with --hf-token (or HF_TOKEN) the headers come, and the token is nowhere.
        rc, out, err = run(binary, ["infer", "--model", "meta-llama/Llama-3.1-8B-Instruct"], env)
        check("gated without token", rc == 3 and "gated or private" in err and "HF_TOKEN" in err and err.count("\n") == 1, (rc, err))
        rc, out, err = run(binary, ["infer", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--hf-token", TOKEN, "--format", "json"], env)
        check("gated with token", rc == 0 and "plain http" in err and TOKEN not in err, err)
        if rc == 0:
            ck = json.loads(out)["model"]["source"]["checkpoint"]
            check("llama bytes", ck["language_model_bytes"] == 16_060_522_496, ck["language_model_bytes"])
        # Through a stand-in curl that logs its command line, then runs the real one (another cache: fetched again).
        bin_dir = os.path.join(tmp, "bin")
        os.makedirs(bin_dir)
        argv_log = os.path.join(tmp, "curl-argv")
        with open(os.path.join(bin_dir, "curl"), "w") as f:
            f.write(f'#!/bin/sh\nprintf "%s\\n" "$@" >> {argv_log}\nexec {shutil.which("curl")} "$@"\n')
        os.chmod(os.path.join(bin_dir, "curl"), 0o755)
        logged = dict(env, HF_TOKEN=TOKEN, PATH=bin_dir + os.pathsep + env["PATH"], XDG_CACHE_HOME=os.path.join(tmp, "xdg2"))
        rc, out2, err2 = run(binary, ["infer", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--format", "json"], logged)
        check("gated with HF_TOKEN", rc == 0, err2)
        with open(argv_log) as f:
            argv = f.read()
        check("token not on curl's command line", "--header" in argv and TOKEN not in argv, argv[:200])
        check("no token to the cdn", served["auth_to_cdn"] == 0 and served["cdn_requests"] > 0, served)
        for d, _, files in [w for c in (cache, logged["XDG_CACHE_HOME"]) for w in os.walk(c)]:
            for f in files:
                with open(os.path.join(d, f), "rb") as fh:
                    check("token not cached", TOKEN.encode() not in fh.read(1 << 20), os.path.join(d, f))
        check("token not printed", TOKEN not in out + err + out2 + err2)

        # One line and exit 3: no such repo, no such revision, a hostile header, nobody listening.
        for name, model, extra_env, expect in (
                ("404 repo", "nobody/no-such-model", {}, "no such model or revision"),
                ("404 revision", "Qwen/Qwen3-30B-A3B@v9", {}, "no such model or revision"),
                ("huge header", "evil/huge-header", {}, "header"),
                ("range ignored", "evil/no-range", {}, "the answer is over 8 bytes"),  # the 8-byte probe
                ("unreachable", "Qwen/Qwen3-32B", {"HF_ENDPOINT": "http://127.0.0.1:9"}, "cannot reach"),
                ("no curl", "Qwen/Qwen3-32B", {"PATH": tmp}, "needs the curl program")):
            rc, out, err = run(binary, ["infer", "--model", model], dict(env, **extra_env))
            check(name, rc == 3 and expect in err and err.count("\n") == 1 and not out, (rc, err))
        # A token that would add a header line is refused before anything is sent (usage error).
        rc, out, err = run(binary, ["infer", "--model", "Qwen/Qwen3-32B", "--hf-token", "abc\nX-Evil: 1"], env)
        check("token with a line break", rc == 2 and "line break" in err and err.count("\n") == 1, (rc, err))
        misbehaving(binary, env, tmp, endpoint)
        server.shutdown()

    if failures:
        print("\n".join(failures))
        return 1
    print("ok: Hub over HTTP (loopback, through curl), headers only, cache, offline, token, 401/404/unreachable/hostile")
    return 0


if __name__ == "__main__":
    sys.exit(main())
