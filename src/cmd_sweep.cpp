// gpuplan sweep train|infer: the full train/infer estimate at every value of one or two swept flags, the largest
// value that fits each --gpu, as a table/json/csv/md, a terminal chart and an SVG file.
#include <fstream>
#include <functional>
#include <map>

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
      {"--batch", "micro-batch per GPU", [](TrainOptions& o, std::int64_t v) { o.workload.batch = v; }},
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

struct Point {
  std::vector<std::int64_t> values;  // one per swept flag
  nlohmann::json memory;             // the report's memory block
  std::vector<bool> fits;            // per --gpu
};

template <class O>
ExitCode run_side(const O& base, const SweepSide& side, const std::vector<Axis<O>>& axes, const char* command,
                  nlohmann::json (*report_of)(const O&), std::ostream& out, std::ostream& err) {
  const Format format = parse_format(base.format);
  // The flags given a list or range, in the order given on the command line (the first is the x axis); a flag
  // given one value is set as in train/infer.
  O fixed = base;
  std::vector<std::size_t> swept;
  std::vector<std::vector<std::int64_t>> values;
  std::vector<std::string> flags;
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
      values.push_back(std::move(v));
      flags.push_back(flag);
    }
  if (swept.empty() || swept.size() > 2)
    throw InputError(std::string("sweep ") + command + ": give one or two of the workload flags a list or range (" +
                     std::to_string(swept.size()) + " given)");
  if (values.size() == 2 && values[0].size() * values[1].size() > max_sweep_points)
    throw InputError("sweep: " + std::to_string(values[0].size() * values[1].size()) + " points, at most " +
                     std::to_string(max_sweep_points));
  const std::vector<std::int64_t> outer = values.size() == 2 ? values[1] : std::vector<std::int64_t>{0};

  // One estimate at a point, without a device (the components) or on one (its verdict and usable memory).
  auto at = [&](std::int64_t x, std::int64_t second, const std::string& gpu) -> nlohmann::json {
    O o = fixed;
    axes[swept[0]].set(o, x);
    if (values.size() == 2) axes[swept[1]].set(o, second);
    o.fit.gpu = gpu;
    o.fit.table = false;
    try {
      return report_of(o);
    } catch (const InputError& e) {
      std::string where = flags[0] + " " + std::to_string(x);
      if (values.size() == 2) where += ", " + flags[1] + " " + std::to_string(second);
      throw InputError("at " + where + ": " + e.what());
    }
  };
  auto fits = [&](std::int64_t x, std::int64_t second, const std::string& gpu) {
    const nlohmann::json r = at(x, second, gpu);
    return r["fit"]["fits"].get<bool>();
  };

  std::vector<Point> points;
  nlohmann::json first;
  std::vector<double> usable(side.gpus.size(), 0);
  for (std::int64_t second : outer)
    for (std::int64_t x : values[0]) {
      Point p;
      p.values = {x};
      if (values.size() == 2) p.values.push_back(second);
      nlohmann::json r = at(x, second, "");
      p.memory = r["memory"];
      if (first.is_null()) first = std::move(r);
      for (std::size_t g = 0; g < side.gpus.size(); ++g) {
        const nlohmann::json r_gpu = at(x, second, side.gpus[g]);
        const nlohmann::json& fit = r_gpu["fit"];
        p.fits.push_back(fit["fits"].get<bool>());
        usable[g] = fit["capacity_bytes"].get<double>();
      }
      points.push_back(std::move(p));
    }

  // Per device and value of the second flag: the largest x that fits, exact between two swept points (memory grows
  // with every swept flag but the parallel degrees, so the boundary is found by bisection in the gap).
  const std::size_t nx = values[0].size();
  nlohmann::json devices = nlohmann::json::array();
  std::vector<std::vector<std::size_t>> last_fits(side.gpus.size());
  bool any_fit = false;
  for (std::size_t g = 0; g < side.gpus.size(); ++g) {
    nlohmann::json largest = nlohmann::json::array();
    for (std::size_t k = 0; k < outer.size(); ++k) {
      std::optional<std::size_t> last;
      for (std::size_t i = 0; i < nx; ++i)
        if (points[k * nx + i].fits[g]) last = i;
      nlohmann::json entry;
      if (values.size() == 2) entry[flags[1]] = outer[k];
      if (!last) {
        entry["value"] = nullptr;
        entry["basis"] = "no swept value fits";
      } else {
        any_fit = true;
        last_fits[g].push_back(k * nx + *last);
        std::int64_t lo = values[0][*last];
        if (*last + 1 < nx) {
          std::int64_t hi = values[0][*last + 1];  // does not fit
          while (hi - lo > 1) {
            const std::int64_t mid = lo + (hi - lo) / 2;
            (fits(mid, outer[k], side.gpus[g]) ? lo : hi) = mid;
          }
          entry["basis"] = "largest value that fits (bisected between the swept values)";
        } else {
          entry["basis"] = "the largest swept value fits; larger ones were not tried";
        }
        entry["value"] = lo;
      }
      largest.push_back(entry);
    }
    devices.push_back({{"gpu", side.gpus[g]}, {"usable_bytes", usable[g]}, {"largest", largest}});
  }

  // The chart: components stacked over one flag, or each value of the second flag's total as a line.
  Chart chart;
  const nlohmann::json& model = first["model"];
  chart.title = fmt::format("{} {} memory per GPU over {}", model["name"].get<std::string>(), command, flags[0]);
  chart.x_name = flags[0];
  chart.x_label = flags[0] + " (" + axes[swept[0]].what + ")";
  for (std::int64_t x : values[0]) chart.x.push_back(grouped(x));
  // The parts that are not zero at every point (inference has no gradients; training no KV cache).
  std::vector<std::size_t> shown;
  for (std::size_t k = 0; k < parts.size(); ++k)
    if (std::any_of(points.begin(), points.end(), [&](const Point& p) { return part(p.memory, parts[k].first) > 0; }))
      shown.push_back(k);
  if (values.size() == 1) {
    for (std::size_t k : shown) {
      ChartSeries s{parts[k].second, {}, k};
      for (const auto& p : points) s.bytes.push_back(part(p.memory, parts[k].first));
      chart.stack.push_back(s);
    }
  } else {
    for (std::size_t k = 0; k < outer.size(); ++k) {
      ChartSeries s{flags[1] + " " + grouped(outer[k]), {}, k};
      for (std::size_t i = 0; i < nx; ++i) s.bytes.push_back(points[k * nx + i].memory["total_bytes"].get<double>());
      chart.lines.push_back(s);
    }
  }
  for (std::size_t g = 0; g < side.gpus.size(); ++g) {
    std::vector<std::string> notes;
    for (const auto& l : devices[g]["largest"]) {
      std::string note = l["value"].is_null() ? "no " + flags[0] + " fits"
                                              : "largest " + flags[0] + " " + grouped(l["value"].get<std::int64_t>());
      if (values.size() == 2) note += " at " + flags[1] + " " + grouped(l[flags[1]].get<std::int64_t>());
      notes.push_back(note);
    }
    chart.limits.push_back({side.gpus[g], usable[g], last_fits[g], notes});
  }
  if (!side.plot.empty()) {
    std::ofstream f(side.plot, std::ios::binary);
    f << render_chart_svg(chart);
    if (!f) throw InputError("--plot " + side.plot + ": cannot write the file");
  }

  // Every point with its components and verdicts; the JSON keeps raw bytes.
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& p : points) {
    nlohmann::json row;
    for (std::size_t a = 0; a < flags.size(); ++a) row[flags[a]] = p.values[a];
    row["memory"] = {{"components", p.memory["components"]},
                     {"allocator_slack_bytes", p.memory["allocator_slack_bytes"]},
                     {"context_bytes", p.memory["context_bytes"]},
                     {"peak_allocated_bytes", p.memory["peak_allocated_bytes"]},
                     {"total_bytes", p.memory["total_bytes"]}};
    nlohmann::json f = nlohmann::json::object();
    for (std::size_t g = 0; g < side.gpus.size(); ++g) f[side.gpus[g]] = bool(p.fits[g]);
    row["fits"] = f;
    rows.push_back(row);
  }
  nlohmann::json swept_json = nlohmann::json::array();
  for (std::size_t a = 0; a < flags.size(); ++a) swept_json.push_back({{"flag", flags[a]}, {"what", axes[swept[a]].what}, {"values", values[a]}});
  nlohmann::json report = {{"schema", "gpuplan/1"},
                           {"command", std::string("sweep ") + command},
                           {"model", model},
                           {"swept", swept_json},
                           {"points", rows},
                           {"devices", devices},
                           {"assumptions", first["assumptions"]}};

  // The answer per device (and value of the second flag), in words.
  std::vector<std::string> answers;
  for (const auto& d : devices)
    for (const auto& l : d["largest"]) {
      const std::string which = values.size() == 2 ? " at " + flags[1] + " " + grouped(l[flags[1]].get<std::int64_t>()) : "";
      const std::string usable_text = gib(d["usable_bytes"].get<double>()) + " usable";
      if (l["value"].is_null())
        answers.push_back(fmt::format("{}: no swept {} fits{}; {}", d["gpu"].get<std::string>(), flags[0], which, usable_text));
      else
        answers.push_back(fmt::format(
            "{}: largest {} that fits{}: {}{}; {}", d["gpu"].get<std::string>(), flags[0], which,
            grouped(l["value"].get<std::int64_t>()),
            l["basis"].get<std::string>().rfind("the largest swept", 0) == 0 ? " (the largest swept; larger not tried)" : "",
            usable_text));
    }
  if (format == Format::json) {
    render_json(report, out);
  } else {
    std::vector<std::string> header = flags;
    for (std::size_t k : shown) header.push_back(parts[k].second);
    header.push_back("total");
    for (const auto& g : side.gpus) header.push_back("fits " + g);
    std::vector<std::vector<std::string>> cells;
    for (const auto& p : points) {
      std::vector<std::string> c;
      for (std::int64_t v : p.values) c.push_back(format == Format::table ? grouped(v) : std::to_string(v));
      auto cell = [&](double bytes) { return format == Format::table ? gib(bytes) : fmt::format("{:.0f}", bytes); };
      for (std::size_t k : shown) c.push_back(cell(part(p.memory, parts[k].first)));
      c.push_back(cell(p.memory["total_bytes"].get<double>()));
      for (bool f : p.fits) c.push_back(f ? "yes" : "no");
      cells.push_back(c);
    }
    if (format == Format::table) {
      if (side.chart || terminal()) {
        render_chart_text(chart, colour(), out);
        out << "\n";
      }
      render_columns(header, cells, out);
      for (const auto& line : answers) fmt::print(out, "{}\n", line);
      if (!side.plot.empty()) fmt::print(out, "chart written to {}\n", side.plot);
    } else {
      render_rows(header, cells, format == Format::md, out);
      if (format == Format::md)
        for (const auto& line : answers) fmt::print(out, "\n- {}", line);
      if (format == Format::md && !answers.empty()) out << "\n";
    }
  }
  if (!side.gpus.empty() && !any_fit) {
    err << "gpuplan: no swept value fits on any --gpu\n";
    return ExitCode::limit;
  }
  return ExitCode::ok;
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
    return run_side(o.train, o.train_side, train_axes(), "train", &train_report, out, err);
  }
  o.infer_side.parse_order = o.infer_cmd->parse_order();
  return run_side(o.infer, o.infer_side, infer_axes(), "infer", &infer_report, out, err);
}

}  // namespace gpuplan::cli
