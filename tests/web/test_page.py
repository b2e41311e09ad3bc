#!/usr/bin/env python3
"""The web page in a real browser: Debian's headless Chromium, driven over WebDriver (Debian's chromedriver, on a
loopback port). For each case the test sets the page's inputs as a user would, reads the numbers from the DOM and
compares them with the native CLI's JSON for the same inputs, and runs the command the page shows to check it
reproduces them. It also reports page load to the first estimate (measured, not asserted: a timed check failed on
the shared 2-core machine with binaries that pass it when the machine is quiet) and saves a screenshot.

usage: test_page.py GPUPLAN_BINARY SITE_DIR CONFIG_JSON SCREENSHOT_PNG
"""
import base64
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

binary, site, config_path, screenshot = sys.argv[1:5]
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C WebDriver element key
failed = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        failed.append(what)


def cli_json(args):
    p = subprocess.run([binary] + args + ["--format", "json"], capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"gpuplan {' '.join(args)}: {p.stderr.strip()}")
    return json.loads(p.stdout)


class Browser:
    def __init__(self):
        for tool in ("chromium", "chromedriver"):
            if not shutil.which(tool):
                sys.exit(f"FAIL {tool} is not installed (Debian packages chromium, chromium-driver)")
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        s.close()
        self.profile = tempfile.mkdtemp(prefix="gpuplan-chromium-")
        self.driver = subprocess.Popen(["chromedriver", f"--port={self.port}"], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
        deadline = time.time() + 20
        while True:
            try:
                if self.call("GET", "/status")["ready"]:
                    break
            except OSError:
                pass
            if time.time() > deadline:
                sys.exit("FAIL chromedriver did not start")
            time.sleep(0.1)
        # The flags this machine's closed network needs (no background connections), headless, no GPU.
        args = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1280,1500", "--hide-scrollbars", f"--user-data-dir={self.profile}"]
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": shutil.which("chromium"), "args": args}}}}
        self.sid = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.load(r)["value"]

    def s(self, method, path, body=None):
        return self.call(method, f"/session/{self.sid}{path}", body if body is not None else ({} if method == "POST" else None))

    def find(self, css):
        return self.s("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def text(self, css):
        return self.s("GET", f"/element/{self.find(css)}/text")

    def attr(self, css, name):
        return self.s("GET", f"/element/{self.find(css)}/attribute/{name}")

    def click(self, css):
        self.s("POST", f"/element/{self.find(css)}/click")

    def type(self, css, value):
        e = self.find(css)
        self.s("POST", f"/element/{e}/clear")
        self.s("POST", f"/element/{e}/value", {"text": str(value)})

    def select(self, css, value):
        """Click the option of a <select> whose value is `value` (an option without a value attribute has its text)."""
        sel = css.lstrip("#")
        xpath = f"//select[@id='{sel}']/option[@value='{value}' or (not(@value) and normalize-space(.)='{value}')]"
        e = self.s("POST", "/element", {"using": "xpath", "value": xpath})[ELEMENT]
        self.s("POST", f"/element/{e}/click")

    def wait(self, script, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            v = self.s("POST", "/execute/sync", {"script": script, "args": []})
            if v:
                return v
            time.sleep(0.05)
        raise TimeoutError(script)

    def estimate(self):
        """Submit and wait for the page to finish (the status line reads ready or error)."""
        self.s("POST", "/execute/sync", {"script": "document.getElementById('status').textContent = '';", "args": []})
        self.click("#estimate")
        return self.wait("const t = document.getElementById('status').textContent; return t === 'ready' || t === 'error' ? t : null;")

    def close(self):
        try:
            self.s("DELETE", "")
        finally:
            self.driver.terminate()
            self.driver.wait(timeout=10)
            shutil.rmtree(self.profile, ignore_errors=True)


def page_command(b):
    """The CLI command lines the page shows, as argument lists."""
    return [shlex.split(line)[1:] for line in b.text("#command").splitlines()]


def cold_load(b):
    """Page load to the first estimate in this browser's first visit of the page (ms), and when the engine was ready.
    A blank page comes first, so the time is the page's own load, not Chromium's start-up."""
    b.s("POST", "/url", {"url": "data:text/html,<p>gpuplan"})
    b.s("POST", "/url", {"url": "file://" + os.path.abspath(os.path.join(site, "index.html"))})
    first = float(b.wait("return document.body.dataset.firstEstimateMs || null;"))
    return first, float(b.wait("return document.body.dataset.engineReadyMs || null;"))


# Page load to the first estimate, cold (a browser's first sight of the page: nothing is cached). Reported, not
# asserted: speed is measured, never a pass/fail on wall time (the same page measured 827–1,093 ms in one hour).
b = Browser()
first_ms, ready_ms = cold_load(b)
try:
    print(f"     page load to the first estimate: {first_ms:.0f} ms (the engine was ready at {ready_ms:.0f} ms)")
    check(ready_ms <= first_ms, "the first estimate is shown after the engine is ready")

    # 1. The default: training llama-3.1-8b on an H100; then every catalog device, the fits-on table.
    expect = cli_json(["train", "--model", "llama-3.1-8b", "--gpu", "h100-sxm"])
    check(float(b.attr("#total", "data-bytes")) == expect["memory"]["total_bytes"], "default train total equals the CLI's")
    check(b.attr("#verdict", "data-fits") == str(expect["fit"]["fits"]).lower(), "default fit verdict equals the CLI's")
    b.wait("return document.getElementById('gpu').options.length > 10;")  # the catalog lists arrive after
    b.select("#gpu", "")
    check(b.estimate() == "ready", "every catalog device: the page estimates")
    expect = cli_json(["train", "--model", "llama-3.1-8b"])
    rows = {d["gpu"]: d["gpus_needed"] for d in expect["fit_table"]["devices"]}
    for gpu in ("h100-sxm", "rtx-4090", "mi300x"):
        page = b.attr(f"#fits tr[data-gpu='{gpu}']", "data-gpus-needed")
        check(page == ("" if rows[gpu] is None else str(rows[gpu])), f"fits-on {gpu}: {page} GPUs, as the CLI")

    # 2. Training inputs typed in, one GPU chosen.
    b.type("#train-batch", 4)
    b.type("#train-seq", 4096)
    b.select("#train-recompute", "full")
    b.type("#train-lora-rank", 16)
    b.select("#gpu", "h100-sxm")
    check(b.estimate() == "ready", "train with inputs: the page estimates")
    args = ["train", "--model", "llama-3.1-8b", "--batch", "4", "--seq", "4096", "--recompute", "full", "--lora-rank", "16",
            "--gpu", "h100-sxm"]
    expect = cli_json(args)
    check(float(b.attr("#total", "data-bytes")) == expect["memory"]["total_bytes"], "train total equals the CLI's")
    check(b.attr("#verdict", "data-fits") == str(expect["fit"]["fits"]).lower(), "train fit verdict equals the CLI's")
    shown = page_command(b)[0]
    check(sorted(shown) == sorted(args), "the page's command is the same command")
    check(cli_json(shown)["memory"]["total_bytes"] == expect["memory"]["total_bytes"], "the page's command reproduces it")
    for key in ("weights", "activations", "logits"):
        check(int(b.text(f"#breakdown tr[data-part='{key}'] td:last-child")) == expect["memory"]["components"][key],
              f"breakdown {key} equals the CLI's")

    # 3. Serving with vLLM, AWQ weights and a long context.
    b.click("input[name=mode][value=infer]")
    b.wait("return document.getElementById('status').textContent === 'ready';")
    b.type("#infer-batch", 8)
    b.type("#infer-context", 32768)
    b.select("#infer-weights", "awq-int4")
    b.select("#infer-profile", "vllm")
    check(b.estimate() == "ready", "infer with inputs: the page estimates")
    shown = page_command(b)[0]
    expect = cli_json(["infer", "--model", "llama-3.1-8b", "--batch", "8", "--context", "32768", "--weights", "awq-int4",
                       "--profile", "vllm", "--gpu", "h100-sxm"])
    check(float(b.attr("#total", "data-bytes")) == expect["memory"]["total_bytes"], "infer (vllm) total equals the CLI's")
    check(cli_json(shown)["memory"]["total_bytes"] == expect["memory"]["total_bytes"], "the page's infer command reproduces it")

    # 4. A sweep: the largest context per device, and the chart the CLI draws.
    b.select("#infer-profile", "pytorch")
    b.select("#infer-weights", "")
    b.type("#infer-batch", 1)
    b.type("#infer-context", 0)
    b.select("#gpu", "rtx-4090")
    b.select("#sweep-flag", "--context")
    b.type("#sweep-range", "4k..128k")
    check(b.estimate() == "ready", "sweep: the page estimates")
    sweep_args = page_command(b)[1]
    check(sweep_args[:2] == ["sweep", "infer"], "the page shows the sweep command")
    expect = cli_json(["sweep", "infer", "--model", "llama-3.1-8b", "--gpu", "rtx-4090", "--context", "4k..128k"])
    largest = expect["devices"][0]["largest"][0]["value"]
    check(f"{largest:,}" in b.text("#sweep-answer"), f"sweep answer names the CLI's largest context ({largest:,})")
    check(b.wait("return document.querySelectorAll('#sweep-chart svg rect title').length;") > 0, "the sweep chart is drawn")
    check(cli_json(sweep_args)["devices"][0]["largest"][0]["value"] == largest, "the page's sweep command reproduces it")
    png = base64.b64decode(b.s("GET", "/screenshot"))
    os.makedirs(os.path.dirname(os.path.abspath(screenshot)), exist_ok=True)
    with open(screenshot, "wb") as f:
        f.write(png)
    print(f"     screenshot: {os.path.abspath(screenshot)}")

    # 5. A pasted config.json, the same file the CLI reads.
    b.select("#sweep-flag", "")
    b.click("input[name=mode][value=train]")
    b.wait("return document.getElementById('status').textContent === 'ready';")
    b.select("#gpu", "")
    with open(config_path) as f:
        config = f.read()
    b.s("POST", "/execute/sync", {"script": "document.getElementById('config').value = arguments[0];", "args": [config]})
    b.type("#train-lora-rank", 0)
    check(b.estimate() == "ready", "pasted config.json: the page estimates")
    shown = page_command(b)[0]
    check(shown[:3] == ["train", "--config", "config.json"], "the command names --config config.json")
    expect = cli_json(["train", "--config", config_path] + shown[3:])
    check(float(b.attr("#total", "data-bytes")) == expect["memory"]["total_bytes"], "pasted config total equals the CLI's")

    # 6. Bad input: a malformed config is one line of error on the page, as on the command line.
    b.s("POST", "/execute/sync", {"script": "document.getElementById('config').value = '{not json';", "args": []})
    check(b.estimate() == "error", "a malformed config.json is an error")
    check("gpuplan:" in b.text("#error") and "\n" not in b.text("#error").strip(), "the error is one gpuplan: line")
finally:
    b.close()
print(f"{'FAILED' if failed else 'passed'}: {len(failed)} failed")
sys.exit(1 if failed else 0)
