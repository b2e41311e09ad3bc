// gpuplan sweep train|infer: the full train/infer estimate at every value of one or two swept flags, the largest
// value that fits each --gpu, as a table/json/csv/md, a terminal chart and an SVG file.
#include <fstream>
#include <functional>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "app.h"
#include "chart.h"
#include "format_units.h"
#include "render.h"

namespace gpuplan::cli {

namespace {

// A flag that takes a range in sweep: its names (as train/infer spell them), what it counts, how to set it.
template <class O>
struct Axis {
  const char* names;
  const char* what;
  std::function<void(O&, std::int64_t)> set;
};

const std::vector<Axis<TrainOptions>>& train_axes() {
  static const std::vector<Axis<TrainOptions>> axes = {
      {"--batch", "micro-batch per GPU", [](TrainOptions& o, std::int64_t v) { o.batch = v; }},
      {"--seq", "sequence length (tokens)", [](TrainOptions& o, std::int64_t v) { o.workload.seq = v; }},
      {"--grad-accum", "gradient-accumulation steps", [](TrainOptions& o, std::int64_t v) { o.workload.grad_accum = v; }},
      {"--lora-rank", "LoRA rank", [](TrainOptions& o, std::int64_t v) { o.workload.lora.rank = v; }},
      {"--gpus", "GPUs per node", [](TrainOptions& o, std::int64_t v) { o.workload.gpus = v; }},
      {"--tp", "tensor-parallel degree", [](TrainOptions& o, std::int64_t v) { o.workload.tp = v; }},
      {"--pp", "pipeline stages", [](TrainOptions& o, std::int64_t v) { o.workload.pp = v; }},
  };
  return axes;
}

const std::vector<Axis<InferOptions>>& infer_axes() {
  static const std::vector<Axis<InferOptions>> axes = {
      {"--batch,--concurrency", "concurrent sequences", [](InferOptions& o, std::int64_t v) { o.workload.batch = v; }},
      {"--prompt-len", "prompt tokens", [](InferOptions& o, std::int64_t v) { o.workload.prompt_len = v; }},
      {"--new-tokens", "generated tokens", [](InferOptions& o, std::int64_t v) { o.workload.new_tokens = v; }},
      {"--context", "KV tokens per sequence", [](InferOptions& o, std::int64_t v) { o.context = v; }},
      {"--tp,--gpus", "tensor-parallel GPUs", [](InferOptions& o, std::int64_t v) { o.workload.tp = v; }},
  };
  return axes;
}

// The stacked parts of a report's memory, bottom first: the tensors by component, then the allocator's cached but
// unallocated blocks and the CUDA context. Their sum is the report's total.
const std::vector<std::pair<const char*, const char*>> parts = {
    {"weights", "weights"},         {"gradients", "gradients"}, {"optimizer_states", "optimizer states"},
    {"activations", "activations"}, {"logits", "logits"},       {"kv_cache", "KV cache"},
    {"overhead", "overhead"},       {"allocator_slack", "allocator slack"}, {"context", "CUDA context"},
};

double part(const nlohmann::json& memory, const std::string& key) {
  if (key == "allocator_slack") return memory["allocator_slack_bytes"].get<double>();
  if (key == "context") return memory["context_bytes"].get<double>();
  return memory["components"][key].get<double>();
}

// Train/infer options with the swept flags replaced by strings, several --gpu, and the plot file.
template <class O>
void add_sweep_options(CLI::App& cmd, SweepSide& side, const std::vector<Axis<O>>& axes) {
  side.ranges.assign(axes.size(), "");
  for (std::size_t i = 0; i < axes.size(); ++i) {
    const std::string names = axes[i].names;
    cmd.remove_option(cmd.get_option(names.substr(0, names.find(','))));
    side.axis_options.push_back(cmd.add_option(names, side.ranges[i],
                                               std::string(axes[i].what) + ": a value, a list or a range (1..64, 4k..128k, 512..4k+512)"));
  }
  for (const char* gone : {"--gpu", "--max-memory", "--require-fit", "--max-cost", "--max-days", "--max-batch", "--max-context"})
    if (auto* opt = cmd.get_option_no_throw(gone)) cmd.remove_option(opt);
  cmd.add_option("--gpu", side.gpus, "Draw this device's usable memory and find the largest value that fits (repeatable)");
  cmd.add_option("--plot", side.plot, "Write the chart as an SVG file");
  cmd.add_flag("--chart", side.chart, "Print the terminal chart also when stdout is not a terminal");
}

// The flags given a list or range, in the order given (the first is the x axis), and their values.
struct Swept {
  std::vector<std::string> flags, whats;
  std::vector<std::vector<std::int64_t>> values;
  bool two() const { return values.size() == 2; }
  // The second flag's values, or one placeholder when only one flag is swept.
  std::vector<std::int64_t> outer() const { return two() ? values[1] : std::vector<std::int64_t>{0}; }
  std::size_t nx() const { return values[0].size(); }
};

// The full report at a point: (x, value of the second flag, --gpu or "" for none).
using Estimate = std::function<nlohmann::json(std::int64_t, std::int64_t, const std::string&)>;

// What an engine that pre-allocates its KV pool (vLLM, SGLang) answers on one --gpu: whether it starts, the pool it
// sizes there with that GPU's own defaults, and how many sequences of the point's context the pool holds.
struct EnginePool {
  bool starts = false;
  double pool_bytes = 0;
  double sequences = 0;
};

struct Point {
  std::vector<std::int64_t> values;  // one per swept flag
  nlohmann::json memory;             // the report's memory block
  std::vector<bool> fits;            // per --gpu
  std::vector<EnginePool> pools;     // per --gpu, under vLLM/SGLang
};

// Under vLLM and SGLang the GPU's memory is the engine's whatever the workload: a point fits when the engine starts
// and its KV pool holds the concurrency at the context (infer's verdict), so a sweep shows the pool and what it
// holds rather than a total that grows past the GPU.
std::optional<EnginePool> engine_pool(const nlohmann::json& report) {
  // A train report has no "serving": the const operator[] must not be asked for a key that is absent.
  const auto it = report.find("serving");
  if (it == report.end()) return std::nullopt;
  const auto& s = *it;
  if (!s.is_object() || !s.contains("kv_pool_bytes") || s["kv_pool_bytes"].is_null()) return std::nullopt;
  return EnginePool{s["starts"].get<bool>(), s["kv_pool_bytes"].get<double>(),
                    s["max_concurrent_sequences"].is_null() ? 0.0 : s["max_concurrent_sequences"].get<double>()};
}

// The sweep runs under vLLM or SGLang on every --gpu: the pool view.
bool engine_sweep(const std::vector<Point>& points, std::size_t gpus) {
  return gpus > 0 && !points.empty() && points.front().pools.size() == gpus;
}

// A GPU's smallest pool over the points (the pool moves only with --tp and SGLang's request table).
double smallest_pool(const std::vector<Point>& points, std::size_t g) {
  double least = points.front().pools[g].pool_bytes;
  for (const auto& p : points) least = std::min(least, p.pools[g].pool_bytes);
  return least;
}

// Per --gpu: the largest x that fits at each value of the second flag (JSON), and the points that are last fits.
struct Boundaries {
  nlohmann::json devices = nlohmann::json::array();
  std::vector<std::vector<std::size_t>> last_fits;
  bool any_fit = false;
};

// Reads the swept flags; a flag given one value is set on `fixed`, as train/infer would.
template <class O>
std::pair<Swept, std::vector<std::size_t>> read_swept(O& fixed, const SweepSide& side, const std::vector<Axis<O>>& axes,
                                                      const char* command) {
  Swept sw;
  std::vector<std::size_t> swept;
  for (const CLI::Option* opt : side.parse_order)
    for (std::size_t i = 0; i < axes.size(); ++i) {
      if (opt != side.axis_options[i] || std::find(swept.begin(), swept.end(), i) != swept.end()) continue;
      const std::string names = axes[i].names;
      const std::string flag = names.substr(0, names.find(','));
      std::vector<std::int64_t> v = parse_sweep(side.ranges[i], flag);
      if (v.size() == 1) {
        axes[i].set(fixed, v[0]);
        continue;
      }
      swept.push_back(i);
      sw.flags.push_back(flag);
      sw.whats.push_back(axes[i].what);
      sw.values.push_back(std::move(v));
    }
  if (swept.empty() || swept.size() > 2)
    throw InputError(std::string("sweep ") + command + ": give one or two of the workload flags a list or range (" +
                     std::to_string(swept.size()) + " given)");
  if (sw.two() && sw.values[0].size() * sw.values[1].size() > max_sweep_points)
    throw InputError("sweep: " + std::to_string(sw.values[0].size() * sw.values[1].size()) + " points, at most " +
                     std::to_string(max_sweep_points));
  return {sw, swept};
}

// Every point without a device (its parts) and on each --gpu (its verdict; `usable` gets each device's memory).
std::vector<Point> evaluate(const Swept& sw, const std::vector<std::string>& gpus, const Estimate& at,
                            nlohmann::json& first, std::vector<double>& usable) {
  std::vector<Point> points;
  usable.assign(gpus.size(), 0);
  for (std::int64_t second : sw.outer())
    for (std::int64_t x : sw.values[0]) {
      Point p{{x}, {}, {}, {}};
      if (sw.two()) p.values.push_back(second);
      nlohmann::json r = at(x, second, "");
      p.memory = r["memory"];
      if (first.is_null()) first = std::move(r);
      for (std::size_t g = 0; g < gpus.size(); ++g) {
        const nlohmann::json on = at(x, second, gpus[g]);
        p.fits.push_back(on["fit"]["fits"].get<bool>());
        usable[g] = on["fit"]["capacity_bytes"].get<double>();
        if (const auto pool = engine_pool(on)) p.pools.push_back(*pool);
      }
      points.push_back(std::move(p));
    }
  return points;
}

// The largest x that fits, exact between two swept points: memory grows with every swept flag but the parallel
// degrees, so the boundary is bisected in the gap after the last swept value that fits.
Boundaries largest_fits(const Swept& sw, const std::vector<Point>& points, const std::vector<std::string>& gpus,
                        const std::vector<double>& usable, const Estimate& at) {
  Boundaries b;
  b.last_fits.resize(gpus.size());
  const std::vector<std::int64_t> outer = sw.outer();
  const std::size_t nx = sw.nx();
  for (std::size_t g = 0; g < gpus.size(); ++g) {
    nlohmann::json largest = nlohmann::json::array();
    for (std::size_t k = 0; k < outer.size(); ++k) {
      std::optional<std::size_t> last;
      for (std::size_t i = 0; i < nx; ++i)
        if (points[k * nx + i].fits[g]) last = i;
      nlohmann::json entry = {{"value", nullptr}, {"basis", "no swept value fits"}};
      if (sw.two()) entry[sw.flags[1]] = outer[k];
      if (last) {
        b.any_fit = true;
        b.last_fits[g].push_back(k * nx + *last);
        std::int64_t lo = sw.values[0][*last];
        entry["basis"] = "the largest swept value fits; larger ones were not tried";
        if (*last + 1 < nx) {
          std::int64_t hi = sw.values[0][*last + 1];  // does not fit
          while (hi - lo > 1) {
            const std::int64_t mid = lo + (hi - lo) / 2;
            (at(mid, outer[k], gpus[g])["fit"]["fits"].get<bool>() ? lo : hi) = mid;
          }
          entry["basis"] = "largest value that fits (bisected between the swept values)";
        }
        entry["value"] = lo;
      }
      largest.push_back(entry);
    }
    b.devices.push_back({{"gpu", gpus[g]}, {"usable_bytes", usable[g]}, {"largest", largest}});
    if (engine_sweep(points, gpus.size())) {
      b.devices.back()["kv_pool_bytes"] = smallest_pool(points, g);
      b.devices.back()["starts"] = std::all_of(points.begin(), points.end(), [&](const Point& p) { return p.pools[g].starts; });
    }
  }
  return b;
}

// The parts that are not zero at every point (inference has no gradients; training no KV cache).
std::vector<std::size_t> shown_parts(const std::vector<Point>& points, std::size_t gpus) {
  std::vector<std::size_t> shown;
  if (engine_sweep(points, gpus)) {
    for (std::size_t k = 0; k < parts.size(); ++k)
      if (std::string(parts[k].first) == "kv_cache") shown.push_back(k);
    return shown;
  }
  for (std::size_t k = 0; k < parts.size(); ++k)
    if (std::any_of(points.begin(), points.end(), [&](const Point& p) { return part(p.memory, parts[k].first) > 0; }))
      shown.push_back(k);
  return shown;
}

// The chart: the parts stacked over one flag, or each value of the second flag's total as a line; each --gpu's
// usable memory with its last fits and, in words, its largest values.
Chart sweep_chart(const std::string& title, const Swept& sw, const std::vector<Point>& points,
                  const std::vector<std::size_t>& shown, const Boundaries& b) {
  const bool engine = engine_sweep(points, b.devices.size());
  Chart chart;
  chart.title = title;
  chart.x_name = sw.flags[0];
  chart.x_label = sw.flags[0] + " (" + sw.whats[0] + ")";
  for (std::int64_t x : sw.values[0]) chart.x.push_back(grouped(x));
  if (!sw.two()) {
    for (std::size_t k : shown) {
      ChartSeries s{parts[k].second, {}, k};
      for (const auto& p : points) s.bytes.push_back(part(p.memory, parts[k].first));
      chart.stack.push_back(s);
    }
  } else {
    const std::vector<std::int64_t> outer = sw.outer();
    for (std::size_t k = 0; k < outer.size(); ++k) {
      ChartSeries s{sw.flags[1] + " " + grouped(outer[k]), {}, k};
      for (std::size_t i = 0; i < sw.nx(); ++i) {
        const auto& m = points[k * sw.nx() + i].memory;
        s.bytes.push_back(engine ? part(m, "kv_cache") : m["total_bytes"].get<double>());
      }
      chart.lines.push_back(s);
    }
  }
  for (std::size_t g = 0; g < b.devices.size(); ++g) {
    const auto& d = b.devices[g];
    std::vector<std::string> notes;
    for (const auto& l : d["largest"]) {
      std::string note = l["value"].is_null() ? "no " + sw.flags[0] + " fits"
                                              : "largest " + sw.flags[0] + " " + grouped(l["value"].get<std::int64_t>());
      if (sw.two()) note += " at " + sw.flags[1] + " " + grouped(l[sw.flags[1]].get<std::int64_t>());
      notes.push_back(note);
    }
    if (engine)
      chart.limits.push_back({d["gpu"].get<std::string>(), d["kv_pool_bytes"].get<double>(), b.last_fits[g], notes,
                              "KV pool"});
    else
      chart.limits.push_back({d["gpu"].get<std::string>(), d["usable_bytes"].get<double>(), b.last_fits[g], notes});
  }
  return chart;
}

// Every point with its parts and verdicts, raw bytes.
nlohmann::json sweep_report(const char* command, const nlohmann::json& first, const Swept& sw,
                            const std::vector<Point>& points, const std::vector<std::string>& gpus, const Boundaries& b) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : points) {
    nlohmann::json row;
    for (std::size_t a = 0; a < sw.flags.size(); ++a) row[sw.flags[a]] = p.values[a];
    const auto& m = p.memory;
    row["memory"] = {{"components", m["components"]},
                     {"allocator_slack_bytes", m["allocator_slack_bytes"]},
                     {"context_bytes", m["context_bytes"]},
                     {"peak_allocated_bytes", m["peak_allocated_bytes"]},
                     {"total_bytes", m["total_bytes"]}};
    row["fits"] = nlohmann::json::object();
    for (std::size_t g = 0; g < gpus.size(); ++g) row["fits"][gpus[g]] = bool(p.fits[g]);
    if (p.pools.size() == gpus.size() && !gpus.empty()) {
      row["engine"] = nlohmann::json::object();
      for (std::size_t g = 0; g < gpus.size(); ++g)
        row["engine"][gpus[g]] = {{"starts", p.pools[g].starts},
                                  {"kv_pool_bytes", p.pools[g].pool_bytes},
                                  {"max_concurrent_sequences", p.pools[g].sequences}};
    }
    rows.push_back(row);
  }
  nlohmann::json swept = nlohmann::json::array();
  for (std::size_t a = 0; a < sw.flags.size(); ++a)
    swept.push_back({{"flag", sw.flags[a]}, {"what", sw.whats[a]}, {"values", sw.values[a]}});
  return {{"schema", "gpuplan/1"},   {"command", std::string("sweep ") + command},
          {"model", first["model"]}, {"swept", swept},
          {"points", rows},          {"devices", b.devices},
          {"assumptions", first["assumptions"]}};
}

// The answer per device (and value of the second flag), in words.
std::vector<std::string> answer_lines(const Swept& sw, const Boundaries& b) {
  std::vector<std::string> answers;
  for (const auto& d : b.devices)
    for (const auto& l : d["largest"]) {
      const std::string gpu = d["gpu"].get<std::string>();
      const std::string at = sw.two() ? " at " + sw.flags[1] + " " + grouped(l[sw.flags[1]].get<std::int64_t>()) : "";
      const std::string usable =
          !d.contains("kv_pool_bytes") ? gib(d["usable_bytes"].get<double>()) + " usable"
          : d["starts"].get<bool>()     ? "KV pool " + gib(d["kv_pool_bytes"].get<double>()) + " (the engine's, with this GPU's defaults)"
                                        : "the engine does not start at every point";
      if (l["value"].is_null()) {
        answers.push_back(fmt::format("{}: no swept {} fits{}; {}", gpu, sw.flags[0], at, usable));
        continue;
      }
      const bool edge = l["basis"].get<std::string>().rfind("the largest swept", 0) == 0;
      answers.push_back(fmt::format("{}: largest {} that fits{}: {}{}; {}", gpu, sw.flags[0], at,
                                    grouped(l["value"].get<std::int64_t>()),
                                    edge ? " (the largest swept; larger not tried)" : "", usable));
    }
  return answers;
}

// The points as rows of cells: the flags, the shown parts, the total, a verdict per --gpu.
std::pair<std::vector<std::string>, std::vector<std::vector<std::string>>> point_rows(
    const Swept& sw, const std::vector<Point>& points, const std::vector<std::size_t>& shown,
    const std::vector<std::string>& gpus, bool human) {
  const bool engine = engine_sweep(points, gpus.size());
  std::vector<std::string> header = sw.flags;
  if (engine) {
    header.push_back("KV needed");
    for (const auto& g : gpus)
      for (const char* what : {"KV pool ", "holds ", "fits "}) header.push_back(what + g);
  } else {
    for (std::size_t k : shown) header.push_back(parts[k].second);
    header.push_back("total");
    for (const auto& g : gpus) header.push_back("fits " + g);
  }
  auto cell = [&](double bytes) { return human ? gib(bytes) : fmt::format("{:.0f}", bytes); };
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : points) {
    std::vector<std::string> c;
    for (std::int64_t v : p.values) c.push_back(human ? grouped(v) : std::to_string(v));
    if (engine) {
      c.push_back(cell(part(p.memory, "kv_cache")));
      for (std::size_t g = 0; g < gpus.size(); ++g) {
        const EnginePool& e = p.pools[g];
        c.push_back(e.starts ? cell(e.pool_bytes) : "no start");
        c.push_back(e.starts ? fmt::format("{:.1f}", e.sequences) : "-");
        c.push_back(p.fits[g] ? "yes" : "no");
      }
    } else {
      for (std::size_t k : shown) c.push_back(cell(part(p.memory, parts[k].first)));
      c.push_back(cell(p.memory["total_bytes"].get<double>()));
      for (bool f : p.fits) c.push_back(f ? "yes" : "no");
    }
    rows.push_back(c);
  }
  return {header, rows};
}

// Everything after the swept flags are known: the estimates, the boundaries, the plot file and the output.
ExitCode run_points(const char* command, const Swept& sw, const SweepSide& side, Format format, const Estimate& at,
                    std::ostream& out, std::ostream& err) {
  nlohmann::json first;
  std::vector<double> usable;
  const std::vector<Point> points = evaluate(sw, side.gpus, at, first, usable);
  const Boundaries b = largest_fits(sw, points, side.gpus, usable, at);
  const std::vector<std::size_t> shown = shown_parts(points, side.gpus.size());
  const std::string model = first["model"]["name"].get<std::string>();
  const Chart chart = sweep_chart(engine_sweep(points, side.gpus.size())
                                      ? fmt::format("{} KV cache needed per GPU over {}, against each GPU's KV pool",
                                                    model, sw.flags[0])
                                      : fmt::format("{} {} memory per GPU over {}", model, command, sw.flags[0]),
                                  sw, points, shown, b);
  if (!side.plot.empty()) {
    std::ofstream f(side.plot, std::ios::binary);
    f << render_chart_svg(chart);
    if (!f) throw InputError("--plot " + side.plot + ": cannot write the file");
  }
  if (format == Format::json) {
    render_json(sweep_report(command, first, sw, points, side.gpus, b), out);
  } else {
    const auto [header, rows] = point_rows(sw, points, shown, side.gpus, format == Format::table);
    const std::vector<std::string> answers = answer_lines(sw, b);
    if (format == Format::table) {
      if (side.chart || terminal()) {
        render_chart_text(chart, colour(), out);
        out << "\n";
      }
      render_columns(header, rows, out);
      for (const auto& line : answers) fmt::print(out, "{}\n", line);
      if (!side.plot.empty()) fmt::print(out, "chart written to {}\n", side.plot);
    } else {
      render_rows(header, rows, format == Format::md, out);
      if (format == Format::md && !answers.empty()) {
        for (const auto& line : answers) fmt::print(out, "\n- {}", line);
        out << "\n";
      }
    }
  }
  if (!side.gpus.empty() && !b.any_fit) {
    err << "gpuplan: no swept value fits on any --gpu\n";
    return ExitCode::limit;
  }
  return ExitCode::ok;
}

template <class O>
ExitCode run_side(const O& base, const SweepSide& side, const std::vector<Axis<O>>& axes, const char* command,
                  nlohmann::json (*report_of)(const O&), std::ostream& out, std::ostream& err) {
  const Format format = parse_format(base.format);
  O fixed = base;
  const auto [sw, swept] = read_swept(fixed, side, axes, command);
  // --gpu-memory names one unlisted device: it is the sweep's only device, shown under that name.
  SweepSide sides = side;
  const std::string unlisted = fixed.fit.gpu_memory.empty() ? "" : "gpu-memory " + fixed.fit.gpu_memory;
  if (!unlisted.empty()) {
    if (!side.gpus.empty()) throw InputError("sweep: --gpu-memory is one unlisted device; give it without --gpu");
    sides.gpus = {unlisted};
  }
  // The full train/infer report at a point; an error names the point.
  const Estimate at = [&, &sw = sw, &swept = swept](std::int64_t x, std::int64_t second, const std::string& gpu) {
    O o = fixed;
    axes[swept[0]].set(o, x);
    if (sw.two()) axes[swept[1]].set(o, second);
    o.fit.gpu = gpu == unlisted ? "" : gpu;
    if (gpu.empty()) o.fit.gpu_memory = o.fit.memory_bandwidth = "";
    o.fit.table = false;
    try {
      return report_of(o);
    } catch (const InputError& e) {
      std::string where = sw.flags[0] + " " + std::to_string(x);
      if (sw.two()) where += ", " + sw.flags[1] + " " + std::to_string(second);
      throw InputError("at " + where + ": " + e.what());
    }
  };
  return run_points(command, sw, sides, format, at, out, err);
}

}  // namespace

void setup_sweep(CLI::App& app, SweepOptions& o, bool with_options) {
  auto* cmd = app.add_subcommand("sweep", "Memory over a range of one or two workload flags, and the largest value "
                                          "that fits each --gpu");
  cmd->require_subcommand(1);
  cmd->footer(
      "Examples:\n"
      "  gpuplan sweep infer --model llama-3.1-8b --context 4k..128k --gpu rtx-4090 --gpu h100-sxm\n"
      "  gpuplan sweep train --model llama-3.1-8b --batch 1..32 --seq 2k,4k,8k --gpu h100-sxm --plot sweep.svg\n"
      "  gpuplan sweep infer --model qwen2.5-7b --concurrency 1..256 --gpu l40s --format csv");
  o.train_cmd = cmd->add_subcommand("train", "Sweep a training workload (every train option; ranges for --batch, --seq, "
                                             "--grad-accum, --lora-rank, --gpus, --tp, --pp)");
  o.infer_cmd = cmd->add_subcommand("infer", "Sweep a serving workload (every infer option; ranges for --batch/"
                                             "--concurrency, --prompt-len, --new-tokens, --context, --tp)");
  if (!with_options) return;
  add_train_options(*o.train_cmd, o.train);
  add_sweep_options(*o.train_cmd, o.train_side, train_axes());
  add_infer_options(*o.infer_cmd, o.infer);
  add_sweep_options(*o.infer_cmd, o.infer_side, infer_axes());
}

ExitCode run_sweep(SweepOptions& o, std::ostream& out, std::ostream& err) {
  if (o.train_cmd->parsed()) {
    o.train_side.parse_order = o.train_cmd->parse_order();
    // A sweep moves the flags it sweeps and holds the rest: the micro-batch too (train would choose one per --gpu,
    // plan.h choose_micro_batch, and the points' memory would then move with it); --batch, swept or not, sets it.
    if (!o.train.batch) o.train.batch = defaults::batch;
    return run_side(o.train, o.train_side, train_axes(), "train", &train_report, out, err);
  }
  o.infer_side.parse_order = o.infer_cmd->parse_order();
  return run_side(o.infer, o.infer_side, infer_axes(), "infer", &infer_report, out, err);
}

}  // namespace gpuplan::cli
