// The gpuplan page: form → the CLI's argument list → the CLI compiled to WebAssembly (gpuplan.js) → its JSON →
// the page. The page computes nothing itself, so its numbers are the CLI's, and it shows the command that
// reproduces them. The inputs live in the URL's hash, so a link restores them.
"use strict";

const GIB = 1073741824;
// The memory parts, bottom of the stack first, in the colours of the CLI's SVG charts (src/chart.cpp).
const PARTS = [
  ["weights", "weights", "#0072B2"], ["gradients", "gradients", "#E69F00"],
  ["optimizer_states", "optimizer states", "#009E73"], ["activations", "activations", "#CC79A7"],
  ["logits", "logits", "#56B4E9"], ["kv_cache", "KV cache", "#D55E00"], ["overhead", "overhead", "#F0E442"],
  ["allocator_slack", "allocator slack", "#7F7F7F"], ["context", "CUDA context", "#BBBBBB"],
];
// The flags `gpuplan sweep` takes ranges for (src/cmd_sweep.cpp).
const SWEEPABLE = {
  train: ["--batch", "--seq", "--grad-accum", "--lora-rank", "--gpus"],
  infer: ["--batch", "--prompt-len", "--new-tokens", "--context", "--tp"],
};
// The CLI's defaults (include/gpuplan/defaults.h and each flag's help): a field at its default adds no flag.
const DEFAULTS = { batch: 1, seq: 2048, prompt_len: 1024, new_tokens: 256 };
const DEBOUNCE_MS = 250;

let engine = null;
const $ = (id) => document.getElementById(id);
const gib = (bytes) => (bytes / GIB).toFixed(2) + " GiB";
const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const fixed = (x, d) => (x === null || x === undefined ? "–" : Number(x).toLocaleString("en", { maximumFractionDigits: d, minimumFractionDigits: d }));
const usd = (x) => (x === null || x === undefined ? "–" : "$" + fixed(x, x < 10 ? 3 : 0));
function duration(s) {
  if (s === null || s === undefined) return "–";
  if (s < 1) return fixed(s * 1000, 1) + " ms";
  if (s < 3600) return fixed(s, 1) + " s";
  return s >= 2 * 86400 ? fixed(s / 86400, 1) + " days" : fixed(s / 3600, 1) + " h";
}

function cli(args) {
  return JSON.parse(engine.run(JSON.stringify(args)));
}

function mode() {
  return document.querySelector("input[name=mode]:checked").value;
}
const base = (m) => (m.startsWith("plan-") ? m.slice(5) : m);

// The model flags: a pasted or dropped config.json (written into the engine's in-memory files), else a name or
// Hub id typed in (the CLI resolves it, to a preset where it is one's release, and says so), else the preset.
function modelArgs() {
  const text = $("config").value.trim();
  if (text) {
    if (!engine.putFile("config.json", text)) throw new Error("config.json is too large");
    return ["--config", "config.json"];
  }
  const typed = $("model-id").value.trim();
  return ["--model", typed || $("preset").value];
}

// Each field as its flag, only where it differs from the CLI's default (so the command stays short).
function fieldArgs(m) {
  const a = [];
  const num = (flag, id, dflt) => {
    const v = $(id).value.trim();
    if (v !== "" && Number(v) !== dflt) a.push(flag, v);
  };
  const text = (flag, id) => {
    const v = $(id).value.trim();
    if (v !== "") a.push(flag, v);
  };
  const pick = (flag, id, dflt) => {
    const v = $(id).value;
    if (v !== "" && v !== dflt) a.push(flag, v);
  };
  if (m === "train") {
    text("--batch", "train-batch");  // empty: train chooses the micro-batch (the largest that fits the GPU)
    num("--seq", "train-seq", DEFAULTS.seq);
    pick("--precision", "train-precision", "bf16");
    pick("--optimizer", "train-optimizer", "adamw");
    pick("--recompute", "train-recompute", "none");
    num("--lora-rank", "train-lora-rank", 0);
    if ($("train-qlora").checked) a.push("--qlora");
    num("--gpus", "train-gpus", 1);
    num("--nodes", "train-nodes", 1);
    pick("--zero", "train-zero", "");
    pick("--offload-optimizer", "train-offload-optimizer", "none");
    pick("--profile", "train-profile", "pytorch");
    text("--tokens", "train-tokens");
  } else if (m === "infer") {
    pick("--profile", "infer-profile", "pytorch");
    num("--batch", "infer-batch", DEFAULTS.batch);
    num("--prompt-len", "infer-prompt-len", DEFAULTS.prompt_len);
    num("--new-tokens", "infer-new-tokens", DEFAULTS.new_tokens);
    num("--context", "infer-context", 0);
    pick("--weights", "infer-weights", "");
    pick("--kv-dtype", "infer-kv-dtype", "");
    num("--tp", "infer-tp", 1);
    text("--gpu-layers", "infer-gpu-layers");
  } else if (m === "plan-train") {
    text("--tokens", "plan-tokens");
    num("--seq", "plan-seq", DEFAULTS.seq);
  } else {
    text("--concurrency", "plan-concurrency");
    text("--tokens-per-second", "plan-tps");
    text("--latency", "plan-latency");
  }
  if (m.startsWith("plan-")) {
    pick("--objective", "plan-objective", "cost");
    num("--top", "plan-top", 5);
  }
  return a;
}

function commandArgs(m) {
  const gpu = $("gpu").value ? ["--gpu", $("gpu").value] : [];
  const head = m.startsWith("plan-") ? ["plan", base(m)] : [m];
  return [...head, ...modelArgs(), ...fieldArgs(m), ...gpu];
}

// A shell word: quoted only when it needs to be.
function shellWord(w) {
  return /^[A-Za-z0-9_./:=,+@-]+$/.test(w) ? w : "'" + w.replace(/'/g, "'\\''") + "'";
}

function part(memory, key) {
  if (key === "allocator_slack") return memory.allocator_slack_bytes;
  if (key === "context") return memory.context_bytes;
  return memory.components[key];
}

function show(id, on) {
  $(id).classList.toggle("hidden", !on);
}

// Terms and values as a definition list; rows whose value is missing are left out.
function kv(id, rows) {
  $(id).innerHTML = rows.filter(([, v]) => v !== null && v !== undefined && v !== "–")
    .map(([k, v]) => `<dt>${esc(k)}</dt><dd>${esc(v)}</dd>`).join("");
}

function renderMemory(report) {
  const m = report.memory;
  $("total").textContent = gib(m.total_bytes) + " per GPU";
  $("total").dataset.bytes = String(m.total_bytes);
  const verdict = $("verdict");
  verdict.className = "";
  if (report.fit) {
    verdict.textContent = (report.fit.fits ? "fits on " : "does not fit on ") + report.fit.gpu +
      (report.fit.reason ? ": " + report.fit.reason : "") + " (" +
      gib(report.fit.capacity_bytes) + " usable, " + Math.round(report.fit.used_fraction * 100) + " % used)";
    verdict.className = report.fit.fits ? "fits" : "nofit";
    verdict.dataset.fits = String(report.fit.fits);
  } else {
    verdict.textContent = "";
    delete verdict.dataset.fits;
  }
  // The stacked bar (in percentages of its own width, so it is as wide as its card) and its table.
  let x = 0, rects = "", rows = "<tr><th>part</th><th class=num>GiB</th><th class=num>bytes</th></tr>";
  for (const [key, name, colour] of PARTS) {
    const v = part(m, key);
    if (!(v > 0)) continue;
    const w = (v / m.total_bytes) * 100;
    rects += `<rect x="${x}%" y="4" width="${w}%" height="26" fill="${colour}"><title>${name}: ${gib(v)}</title></rect>`;
    x += w;
    rows += `<tr data-part="${key}"><td><span class="swatch" style="background:${colour}"></span>${name}</td>` +
      `<td class=num>${(v / GIB).toFixed(2)}</td><td class=num>${v}</td></tr>`;
  }
  $("bar").innerHTML = rects;
  $("breakdown").innerHTML = rows;
  const notes = ((report.model || {}).source || {}).notes || [];
  $("notes").innerHTML = notes.map((n) => `<p class="note">${esc(n)}</p>`).join("");
}

// Serving: throughput, time to first token and price per token (with a GPU).
function renderSpeed(report) {
  const t = report.throughput, c = report.cost;
  show("speed-card", !!t);
  if (!t) return;
  $("speed-basis").textContent = c && c.price_basis ? "price: " + c.price_basis : "no catalog price for this GPU";
  kv("speed", [
    ["time to first token", duration(t.time_to_first_token_seconds)],
    ["per output token", duration(t.per_token_latency_seconds)],
    ["decode, all sequences", fixed(t.decode_tokens_per_s, 0) + " tokens/s"],
    ["decode, per sequence", fixed(t.decode_tokens_per_s_per_sequence, 1) + " tokens/s"],
    ["prefill", fixed(t.prefill_tokens_per_s, 0) + " tokens/s"],
    ["decode is bound by", t.decode_bound],
    ["$ per 1M output tokens", c ? usd(c.usd_per_million_output_tokens) : null],
    ["$ per 1M input tokens", c ? usd(c.usd_per_million_input_tokens) : null],
    ["$ per hour", c ? usd(c.usd_per_hour) : null],
  ]);
  $("speed").dataset.ttft = String(t.time_to_first_token_seconds);
}

// The engine's own start-up figures: vLLM/SGLang's pool, tokens and concurrency; llama.cpp/Ollama's layers and
// host memory.
function renderEngine(report) {
  const s = report.serving;
  const on = !!(s && s.engine);
  show("engine-card", on);
  if (!on) return;
  $("engine-name").textContent = s.engine;
  const bytes = (b) => (b === null || b === undefined ? null : gib(b));
  kv("engine", [
    ["starts", s.starts === null || s.starts === undefined ? null : s.starts ? "yes" : "no: the pool cannot hold one max_model_len request"],
    ["memory budget", bytes(s.budget_bytes)],
    ["KV cache pool", bytes(s.kv_pool_bytes)],
    ["KV tokens", s.kv_tokens === null ? null : fixed(s.kv_tokens, 0)],
    ["KV blocks", s.kv_blocks === null ? null : fixed(s.kv_blocks, 0)],
    ["concurrent sequences at this context", s.max_concurrent_sequences === null ? null : fixed(s.max_concurrent_sequences, 2)],
    ["longest max_model_len that starts", s.largest_max_model_len === null ? null : fixed(s.largest_max_model_len, 0)],
    ["smallest gpu_memory_utilization that starts", s.min_gpu_memory_utilization === null ? null : fixed(s.min_gpu_memory_utilization, 3)],
    ["smallest mem_fraction_static that starts", s.min_mem_fraction_static === null ? null : fixed(s.min_mem_fraction_static, 3)],
    ["profiling peak (activations)", bytes(s.activation_peak_bytes)],
    ["CUDA graphs", bytes(s.cuda_graph_bytes)],
    ["layers on the GPU", s.gpu_layers === null ? null : String(s.gpu_layers)],
    ["layers whose routed experts stay in host memory", s.host_expert_layers ? String(s.host_expert_layers) : null],
    ["host memory", bytes(s.host_memory_bytes)],
  ]);
  $("engine").dataset.kvTokens = String(s.kv_tokens ?? "");
  $("engine").dataset.gpuLayers = String(s.gpu_layers ?? "");
}

// Training: time, GPU-hours, cost and energy (with a GPU).
function renderRun(report) {
  const t = report.time, c = report.cost, e = report.energy;
  show("run-card", !!t);
  if (!t) return;
  $("run-basis").textContent = `${fixed(report.compute.tokens / 1e9, 1)}B tokens on ${t.gpus} × ${t.gpu}`;
  kv("run", [
    ["time", duration(t.seconds)],
    ["GPU-hours", fixed(t.gpu_hours, 0)],
    ["micro-batch", report.workload.batch_defaulted ? report.workload.batch_basis : String(report.workload.batch)],
    ["one step", duration(t.step_seconds)],
    ["tokens/s per GPU", fixed(t.tokens_per_second_per_gpu, 0)],
    ["MFU", fixed(100 * t.mfu, 1) + " % (" + t.mfu_basis + ")"],
    ["cost", c ? usd(c.usd) : null],
    ["price", c ? "$" + fixed(c.usd_per_gpu_hour, 2) + " per GPU-hour, " + c.price_basis : "no catalog price for this GPU"],
    ["energy", e ? fixed(e.kwh, 0) + " kWh" : null],
  ]);
  $("run").dataset.days = String(t.days);
  $("run").dataset.usd = String(c ? c.usd : "");
}

// The fit advice (`train --format json` adds `advice` when a setup does not fit or with --advise): each change,
// its flags, and what it leaves. Drawn only when the CLI gives it.
function renderAdvice(report) {
  const advice = Array.isArray(report.advice) ? report.advice : [];
  show("advice-card", advice.length > 0);
  let rows = "<tr><th>change</th><th>flags</th><th class=num>per GPU</th><th class=num>step</th><th class=num>cost</th></tr>";
  for (const a of advice) {
    const cost = a.cost && typeof a.cost.usd === "number" ? usd(a.cost.usd) : "–";
    rows += `<tr class="advice"><td>${esc(a.change ?? "")}</td><td><code>${esc((a.flags || []).join(" "))}</code></td>` +
      `<td class=num>${typeof a.total_bytes === "number" ? gib(a.total_bytes) : "–"}</td>` +
      `<td class=num>${typeof a.step_seconds === "number" ? duration(a.step_seconds) : "–"}</td><td class=num>${cost}</td></tr>`;
  }
  $("advice").innerHTML = advice.length ? rows : "";
}

// Without a GPU: each catalog device, the GPUs it takes, and that layout's share of one GPU's memory.
function renderFits(report) {
  const table = report.fit_table;
  show("fits-card", !!table);
  if (!table) return;
  $("fits-basis").textContent = "GPUs needed: " + (table.gpus_needed_means || "");
  let rows = "<tr><th>GPU</th><th class=num>usable</th><th class=num>GPUs needed</th><th class=num>memory used there</th></tr>";
  for (const d of table.devices) {
    const share = d.used_fraction_at_gpus_needed ?? (d.gpus_needed === null ? null : d.used_fraction);
    rows += `<tr data-gpu="${esc(d.gpu)}" data-gpus-needed="${d.gpus_needed ?? ""}"><td>${esc(d.gpu)}</td>` +
      `<td class=num>${gib(d.capacity_bytes)}</td><td class=num>${d.gpus_needed ?? "more than the search"}</td>` +
      `<td class=num>${share === null ? "–" : Math.round(share * 100) + " %"}</td></tr>`;
  }
  $("fits").innerHTML = rows;
}

// The planner's ranked setups: one row each, every cell labelled (a phone shows each row as a labelled list).
function renderPlan(report, m) {
  const best = report.best || [];
  $("plan-why").textContent = report.why || "no setup meets the request";
  $("plan-basis").textContent = report.search && report.search.configurations ?
    fixed(report.search.configurations, 0) + " configurations searched" : "";
  const train = m === "plan-train";
  const columns = train ? ["#", "GPU", "GPUs", "offering", "layout", "memory / usable", "time", "cost"]
    : ["#", "GPU", "replicas × TP", "offering", "weights / KV", "tokens/s", "per token", "$ / 1M out"];
  const numeric = [false, false, true, false, false, true, true, true];
  const cell = (v, i) => `<td data-label="${esc(columns[i])}"${numeric[i] ? " class=num" : ""}>${esc(v)}</td>`;
  // The instances a setup rents (cost.instance): "16 × lambda gpu_8x_h100_sxm5 (8 GPUs each)".
  const rented = (b) => `${b.instances} × ${b.provider} ${b.instance} ` +
    `(${b.cost.instance.gpus} GPU${b.cost.instance.gpus === 1 ? "" : "s"} each)`;
  let rows = "<tr>" + columns.map((c, i) => `<th${numeric[i] ? " class=num" : ""}>${esc(c)}</th>`).join("") + "</tr>";
  for (const b of best) {
    let cells;
    if (train) {
      const L = b.layout;
      const layout = `dp ${L.data} · tp ${L.tensor} · pp ${L.pipeline} · ZeRO-${L.zero} · mb ${L.micro_batch} · ${L.recompute}` +
        (L.offload !== "none" ? ` · offload ${L.offload}` : "");
      cells = [b.rank, b.gpu, b.gpus, rented(b), layout,
        `${(b.memory_bytes / GIB).toFixed(1)} / ${gib(b.capacity_bytes)}`, duration(b.seconds), usd(b.usd)];
    } else {
      cells = [b.rank, b.gpu, `${b.replicas} × ${b.tp}`, rented(b), b.weights + " / " + b.kv_dtype,
        fixed(b.decode_tokens_per_s, 0), duration(b.per_token_latency_seconds), usd(b.usd_per_million_output_tokens)];
    }
    rows += `<tr class="plan-row">${cells.map(cell).join("")}</tr>`;
  }
  $("plan").innerHTML = best.length ? rows : "";
}

// The same estimate on several GPUs, one row each.
function renderComparison(m, args) {
  const names = $("compare").value.split(",").map((s) => s.trim()).filter(Boolean);
  const on = names.length > 0 && !m.startsWith("plan-");
  show("compare-card", on);
  if (!on) return;
  const gpus = [...new Set([...($("gpu").value ? [$("gpu").value] : []), ...names])];
  const withoutGpu = args.filter((w, i, all) => w !== "--gpu" && all[i - 1] !== "--gpu");
  const train = m === "train";
  let rows = "<tr><th>GPU</th><th class=num>per GPU</th><th>fits</th><th class=num>used</th>" +
    (train ? "<th class=num>time</th><th class=num>cost</th>" : "<th class=num>first token</th><th class=num>tokens/s</th><th class=num>$ / 1M out</th>") + "</tr>";
  for (const g of gpus) {
    const r = cli([...withoutGpu, "--gpu", g, "--format", "json"]);
    if (r.code !== 0 && r.code !== 1) throw new Error(r.err.trim());
    const rep = JSON.parse(r.out);
    const f = rep.fit;
    rows += `<tr data-gpu="${esc(f.gpu)}" data-fits="${f.fits}"><td>${esc(f.gpu)}</td><td class=num>${gib(rep.memory.total_bytes)}</td>` +
      `<td>${f.fits ? "yes" : "no"}</td><td class=num>${Math.round(f.used_fraction * 100)} %</td>` +
      (train ? `<td class=num>${rep.time ? duration(rep.time.seconds) : "–"}</td><td class=num>${rep.cost ? usd(rep.cost.usd) : "–"}</td>`
        : `<td class=num>${rep.throughput ? duration(rep.throughput.time_to_first_token_seconds) : "–"}</td>` +
          `<td class=num>${rep.throughput ? fixed(rep.throughput.decode_tokens_per_s, 0) : "–"}</td>` +
          `<td class=num>${rep.cost ? usd(rep.cost.usd_per_million_output_tokens) : "–"}</td>`) + "</tr>";
  }
  $("comparison").innerHTML = rows;
}

function renderSweep(m, args) {
  const flag = $("sweep-flag").value;
  const on = !!flag && !m.startsWith("plan-");
  show("sweep-card", on);
  if (!on) return null;
  // The estimate's own flags but the swept one, then the range.
  const sweep = ["sweep", ...args.filter((w, i, all) => w !== flag && all[i - 1] !== flag), flag, $("sweep-range").value.trim()];
  const r = cli([...sweep, "--plot", "/sweep.svg", "--format", "json"]);
  if (r.code !== 0 && r.code !== 1) throw new Error(r.err.trim());
  const report = JSON.parse(r.out);
  $("sweep-chart").innerHTML = engine.readFile("/sweep.svg");  // SVG written by the CLI; its text is XML-escaped
  // Under vLLM/SGLang a point fits when the engine starts and its KV pool holds the requests (the CLI's verdict).
  const pool = (d) => d.kv_pool_bytes === undefined ? "" : d.starts ? ` (KV pool ${gib(d.kv_pool_bytes)})` : " (the engine does not start)";
  $("sweep-answer").textContent = report.devices.map((d) => d.largest.map((l) =>
    (l.value === null ? `${d.gpu}: no swept value fits` : `${d.gpu}: largest ${flag} that fits ${l.value.toLocaleString("en")}`) + pool(d)).join("; ")).join("; ");
  return sweep;
}

const RESULT_CARDS = ["speed-card", "engine-card", "run-card", "advice-card", "plan-card", "compare-card", "sweep-card", "fits-card"];

// An error replaces the result: nothing of the last estimate stays on screen beside it.
function showError(message) {
  $("error").textContent = message;
  $("status").textContent = "error";
  show("result", false);
  for (const id of RESULT_CARDS) show(id, false);
  show("command-card", false);
}

function render(report, m) {
  const plan = m.startsWith("plan-");
  show("result", !plan);
  show("plan-card", plan);
  if (plan) {
    renderPlan(report, m);
    for (const id of ["speed-card", "engine-card", "run-card", "advice-card", "fits-card"]) show(id, false);
    return;
  }
  renderMemory(report);
  renderSpeed(report);
  renderEngine(report);
  renderRun(report);
  renderAdvice(report);
  renderFits(report);
}

function estimate() {
  clearTimeout(estimate.timer);
  $("error").textContent = "";
  try {
    const m = mode();
    const args = commandArgs(m);
    const r = cli([...args, "--format", "json"]);
    if (r.code !== 0 && r.code !== 1) throw new Error(r.err.trim());
    const report = JSON.parse(r.out);
    render(report, m);
    renderComparison(m, args);
    const sweep = renderSweep(m, args);
    const lines = ["gpuplan " + args.map(shellWord).join(" ")];
    if (sweep) lines.push("gpuplan " + sweep.map(shellWord).join(" "));
    $("command").textContent = lines.join("\n");
    show("command-card", true);
    $("assumptions").textContent = (report.assumptions || []).join(" · ");
    $("status").textContent = "ready";
    saveState();
  } catch (e) {
    showError(String(e.message || e));
  }
}

// Results follow the inputs: an estimate a moment after the last change.
function schedule() {
  clearTimeout(estimate.timer);
  estimate.timer = setTimeout(estimate, DEBOUNCE_MS);
}

// The inputs in the URL's hash (only those that differ from the page's own values), and back.
const STATE_IDS = () => [...document.querySelectorAll("#inputs input[id], #inputs select[id]")].filter((e) => e.id !== "config");
function saveState() {
  const p = new URLSearchParams();
  p.set("mode", mode());
  for (const e of STATE_IDS()) {
    const v = e.type === "checkbox" ? (e.checked ? "1" : "") : e.value;
    const initial = e.type === "checkbox" ? (e.defaultChecked ? "1" : "") : e.tagName === "SELECT" ? e.dataset.initial : e.defaultValue;
    if (v !== initial) p.set(e.id, v);
  }
  history.replaceState(null, "", "#" + p.toString());
}

function restoreState() {
  const p = new URLSearchParams(location.hash.slice(1));
  const m = p.get("mode");
  const radio = m && document.querySelector(`input[name=mode][value="${CSS.escape(m)}"]`);
  if (radio) radio.checked = true;
  setMode();
  for (const [k, v] of p) {
    const e = k === "mode" || k === "config" ? null : document.getElementById(k);
    if (!e || !e.closest("#inputs")) continue;
    if (e.type === "checkbox") e.checked = v === "1";
    else if (e.tagName === "SELECT" && ![...e.options].some((o) => o.value === v)) e.add(new Option(v, v));
    if (e.type !== "checkbox") e.value = v;
  }
}

function setMode() {
  const m = mode();
  for (const el of document.querySelectorAll("[data-mode]")) el.classList.toggle("hidden", !el.dataset.mode.split(" ").includes(m));
  const sel = $("sweep-flag");
  const kept = sel.value;
  const flags = SWEEPABLE[base(m)];
  sel.innerHTML = '<option value="">none</option>' + flags.map((f) => `<option>${f}</option>`).join("");
  if (flags.includes(kept)) sel.value = kept;
}

function loadCatalogs() {
  const models = JSON.parse(cli(["models", "--format", "json"]).out).models;
  const chosen = $("preset").value;
  $("preset").innerHTML = models.map((x) => `<option value="${esc(x.id)}">${esc(x.id)}</option>`).join("");
  $("preset").value = chosen;
  const devices = JSON.parse(cli(["hardware", "list", "--format", "json"]).out);
  const gpu = $("gpu").value;
  $("gpu").innerHTML = '<option value="">every catalog device</option>' +
    devices.map((d) => `<option value="${esc(d.id)}">${esc(d.id)} (${Math.round(d.memory_bytes / 1e9)} GB)</option>`).join("");
  $("gpu").value = gpu;
  $("gpu").dataset.initial = "h100-sxm";
  document.body.dataset.catalogs = "loaded";
}

function wire() {
  for (const e of document.querySelectorAll("#inputs select")) e.dataset.initial = e.dataset.initial ?? e.value;
  $("inputs").addEventListener("submit", (e) => { e.preventDefault(); estimate(); });
  $("inputs").addEventListener("input", (e) => { if (e.target.name !== "mode") schedule(); });
  $("inputs").addEventListener("change", (e) => { if (e.target.name !== "mode" && e.target.tagName === "SELECT") schedule(); });
  for (const r of document.querySelectorAll("input[name=mode]")) r.addEventListener("change", () => { setMode(); estimate(); });
  $("copy").addEventListener("click", () => navigator.clipboard && navigator.clipboard.writeText($("command").textContent));
  $("share").addEventListener("click", () => { saveState(); navigator.clipboard && navigator.clipboard.writeText(location.href); });
  window.addEventListener("hashchange", () => { restoreState(); estimate(); });
  const drop = $("drop");
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    const f = e.dataTransfer.files[0];
    if (f) f.text().then((t) => { $("config").value = t; estimate(); });
  });
}

createGpuplan().then((m) => {
  engine = m;
  document.body.dataset.engineReadyMs = String(Math.round(performance.now()));
  wire();
  restoreState();
  estimate();  // the default preset is in the page already; the lists of presets and GPUs follow
  // Page load to the first estimate on screen, for the browser test.
  document.body.dataset.firstEstimateMs = String(Math.round(performance.now()));
  setTimeout(() => {
    // A restored choice of preset or GPU not in the page's first lists is kept through the reload of the lists.
    const keep = { preset: $("preset").value, gpu: $("gpu").value };
    loadCatalogs();
    for (const [id, v] of Object.entries(keep)) if ([...$(id).options].some((o) => o.value === v)) $(id).value = v;
  }, 0);
});
