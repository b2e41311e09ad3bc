// The gpuplan page: form → the CLI's argument list → the CLI compiled to WebAssembly (gpuplan.js) → its JSON →
// the page. The page computes nothing itself, so its numbers are the CLI's, and it shows the command that
// reproduces them.
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

let engine = null;
const $ = (id) => document.getElementById(id);
const gib = (bytes) => (bytes / GIB).toFixed(2) + " GiB";

function cli(args) {
  return JSON.parse(engine.run(JSON.stringify(args)));
}

function mode() {
  return document.querySelector("input[name=mode]:checked").value;
}

// The model flags: a pasted or dropped config.json (written into the engine's in-memory files), else the preset.
function modelArgs() {
  const text = $("config").value.trim();
  if (text) {
    if (!engine.putFile("config.json", text)) throw new Error("config.json is too large");
    return ["--config", "config.json"];
  }
  return ["--model", $("preset").value];
}

// Each field as its flag, only where it differs from the CLI's default (so the command stays short).
function workloadArgs(m) {
  const a = [];
  const num = (flag, id, dflt) => {
    const v = $(id).value.trim();
    if (v !== "" && Number(v) !== dflt) a.push(flag, v);
  };
  const pick = (flag, id, dflt) => {
    const v = $(id).value;
    if (v !== "" && v !== dflt) a.push(flag, v);
  };
  if (m === "train") {
    num("--batch", "train-batch", 1);
    num("--seq", "train-seq", 2048);
    pick("--precision", "train-precision", "bf16");
    pick("--optimizer", "train-optimizer", "adamw");
    pick("--recompute", "train-recompute", "none");
    num("--lora-rank", "train-lora-rank", 0);
    if ($("train-qlora").checked) a.push("--qlora");
    num("--gpus", "train-gpus", 1);
    pick("--zero", "train-zero", "");
  } else {
    num("--batch", "infer-batch", 1);
    num("--prompt-len", "infer-prompt-len", 1024);
    num("--new-tokens", "infer-new-tokens", 256);
    num("--context", "infer-context", 0);
    pick("--weights", "infer-weights", "");
    pick("--kv-dtype", "infer-kv-dtype", "");
    pick("--profile", "infer-profile", "pytorch");
    num("--tp", "infer-tp", 1);
  }
  return a;
}

function gpuArgs() {
  return $("gpu").value ? ["--gpu", $("gpu").value] : [];
}

// A shell word: quoted only when it needs to be.
function shellWord(w) {
  return /^[A-Za-z0-9_./:=,+-]+$/.test(w) ? w : "'" + w.replace(/'/g, "'\\''") + "'";
}

function part(memory, key) {
  if (key === "allocator_slack") return memory.allocator_slack_bytes;
  if (key === "context") return memory.context_bytes;
  return memory.components[key];
}

function renderMemory(report) {
  const m = report.memory;
  $("total").textContent = gib(m.total_bytes) + " per GPU";
  $("total").dataset.bytes = String(m.total_bytes);
  const verdict = $("verdict");
  verdict.className = "";
  if (report.fit) {
    verdict.textContent = (report.fit.fits ? "fits on " : "does not fit on ") + report.fit.gpu + " (" +
      gib(report.fit.capacity_bytes) + " usable, " + Math.round(report.fit.used_fraction * 100) + " % used)";
    verdict.className = report.fit.fits ? "fits" : "nofit";
    verdict.dataset.fits = String(report.fit.fits);
  } else {
    verdict.textContent = "";
    delete verdict.dataset.fits;
  }
  // The stacked bar and its table: the parts sum to the total.
  const bar = $("bar");
  const width = bar.clientWidth || 600;
  let x = 0, rects = "", rows = "<tr><th>part</th><th class=num>GiB</th><th class=num>bytes</th></tr>";
  for (const [key, name, colour] of PARTS) {
    const v = part(m, key);
    if (!(v > 0)) continue;
    const w = (v / m.total_bytes) * width;
    rects += `<rect x="${x}" y="4" width="${w}" height="26" fill="${colour}"><title>${name}: ${gib(v)}</title></rect>`;
    x += w;
    rows += `<tr data-part="${key}"><td><span class="swatch" style="background:${colour}"></span>${name}</td>` +
      `<td class=num>${(v / GIB).toFixed(2)}</td><td class=num>${v}</td></tr>`;
  }
  bar.innerHTML = rects;
  $("breakdown").innerHTML = rows;
}

function renderFits(report) {
  const table = report.fit_table;
  $("fits-card").classList.toggle("hidden", !table);
  if (!table) return;
  $("fits-basis").textContent = table.basis || "";
  let rows = "<tr><th>GPU</th><th class=num>usable</th><th class=num>GPUs needed</th><th class=num>one GPU used</th></tr>";
  for (const d of table.devices) {
    rows += `<tr data-gpu="${d.gpu}" data-gpus-needed="${d.gpus_needed ?? ""}"><td>${d.gpu}</td>` +
      `<td class=num>${gib(d.capacity_bytes)}</td><td class=num>${d.gpus_needed ?? "more than the search"}</td>` +
      `<td class=num>${Math.round(d.used_fraction * 100)} %</td></tr>`;
  }
  $("fits").innerHTML = rows;
}

function renderSweep(m, base) {
  const flag = $("sweep-flag").value;
  $("sweep-card").classList.toggle("hidden", !flag);
  if (!flag) return null;
  // The estimate's own flags but the swept one, then the range.
  const args = ["sweep", ...base.filter((w, i, all) => w !== flag && all[i - 1] !== flag), flag, $("sweep-range").value.trim()];
  const r = cli([...args, "--plot", "/sweep.svg", "--format", "json"]);
  if (r.code !== 0 && r.code !== 1) throw new Error(r.err.trim());
  const report = JSON.parse(r.out);
  $("sweep-chart").innerHTML = engine.readFile("/sweep.svg");  // SVG written by the CLI; its text is XML-escaped
  $("sweep-answer").textContent = report.devices.map((d) => d.largest.map((l) =>
    l.value === null ? `${d.gpu}: no swept value fits` : `${d.gpu}: largest ${flag} that fits ${l.value.toLocaleString("en")}`).join("; ")).join("; ");
  return args;
}

function estimate() {
  $("error").textContent = "";
  try {
    const m = mode();
    const args = [m, ...modelArgs(), ...workloadArgs(m), ...gpuArgs()];
    const r = cli([...args, "--format", "json"]);
    if (r.code !== 0 && r.code !== 1) throw new Error(r.err.trim());
    const report = JSON.parse(r.out);
    renderMemory(report);
    renderFits(report);
    const sweep = renderSweep(m, args);
    const lines = ["gpuplan " + args.map(shellWord).join(" ")];
    if (sweep) lines.push("gpuplan " + sweep.map(shellWord).join(" "));
    $("command").textContent = lines.join("\n");
    $("command").style.whiteSpace = "pre-wrap";
    $("assumptions").textContent = (report.assumptions || []).join(" · ");
    $("status").textContent = "ready";
  } catch (e) {
    $("error").textContent = String(e.message || e);
    $("status").textContent = "error";
  }
}

function setMode() {
  const m = mode();
  for (const fs of document.querySelectorAll("fieldset[data-mode]")) fs.classList.toggle("hidden", fs.dataset.mode !== m);
  const sel = $("sweep-flag");
  sel.innerHTML = '<option value="">none</option>' + SWEEPABLE[m].map((f) => `<option>${f}</option>`).join("");
}

function loadCatalogs() {
  const models = JSON.parse(cli(["models", "--format", "json"]).out).models;
  const chosen = $("preset").value;
  $("preset").innerHTML = models.map((x) => `<option value="${x.id}">${x.id}</option>`).join("");
  $("preset").value = chosen;
  const devices = JSON.parse(cli(["hardware", "list", "--format", "json"]).out);
  const gpu = $("gpu").value;
  $("gpu").innerHTML = '<option value="">every catalog device</option>' +
    devices.map((d) => `<option value="${d.id}">${d.id} (${Math.round(d.memory_bytes / 1e9)} GB)</option>`).join("");
  $("gpu").value = gpu;
}

function wire() {
  $("inputs").addEventListener("submit", (e) => { e.preventDefault(); estimate(); });
  for (const r of document.querySelectorAll("input[name=mode]")) r.addEventListener("change", () => { setMode(); estimate(); });
  $("copy").addEventListener("click", () => navigator.clipboard && navigator.clipboard.writeText($("command").textContent));
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
  setMode();
  estimate();  // the default preset is in the page already; the lists of presets and GPUs follow
  // Page load to the first estimate on screen, for the browser test.
  document.body.dataset.firstEstimateMs = String(Math.round(performance.now()));
  setTimeout(loadCatalogs, 0);
});
