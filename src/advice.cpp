// gpuplan train's fit advice: the changes people make when a training setup does not fit (or with --advise), each
// run through the whole estimator (train_report on the changed options), ranked by the user's objective.
#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "app.h"

namespace gpuplan::cli {

namespace {

// One way to change the setup: what it says, the flags that make it, and how far it moves from what the user asked
// for (least-change ranks by it): 1 the same training, slower or leaner; 2 the same training with other numerics or
// host memory; 3 more or other hardware, or 16-bit updates; 4 another method (adapters); 5 another method on a 4-bit
// base; 6 other data (shorter sequences).
struct Change {
  std::string text;
  int distance = 1;
  std::vector<std::string> flags;
  std::function<void(TrainOptions&)> apply;
};

// Changes of one kind, mildest first: the first that fits is the one to show.
using Family = std::vector<Change>;

std::string num(std::int64_t v) { return std::to_string(v); }

// `tokens`: the run's tokens when they are the pre-training default, which a LoRA run would not share (it is priced
// per 1B tokens): its entries then state them with --tokens, so that every entry prices the same run. `batch`: the
// micro-batch the setup ran at (--batch, or the one train chose without it).
std::vector<Family> families(const TrainOptions& o, std::optional<std::int64_t> tokens, std::int64_t batch) {
  const TrainingWorkload& w = o.workload;
  const bool lora = w.lora.rank > 0;
  std::vector<Family> out;
  if (!o.grad_checkpointing && o.recompute != "full")
    out.push_back({{"recompute every layer (activation checkpointing): the same training, ~1/3 more compute", 1,
                    {"--recompute", "full"}, [](TrainOptions& t) { t.recompute = "full"; }}});
  if (batch > 1) {
    Family f;
    for (std::int64_t b = batch / 2; b >= 1; b /= 2) {
      if (batch % b) continue;
      const std::int64_t ga = w.grad_accum * (batch / b);
      f.push_back({fmt::format("micro-batch {} × {} accumulation steps: the same tokens per step", b, ga), 1,
                   {"--batch", num(b), "--grad-accum", num(ga)}, [b, ga](TrainOptions& t) {
                     t.batch = b;
                     t.workload.grad_accum = ga;
                   }});
    }
    out.push_back(f);
  }
  if (o.loss == "eager")
    out.push_back({{"chunked cross-entropy (torchtune's CEWithChunkedOutputLoss): no full fp32 logits", 1,
                    {"--loss", "chunked"}, [](TrainOptions& t) { t.loss = "chunked"; }},
                   {"fused linear cross-entropy (Liger): the logits never materialise", 1, {"--loss", "fused"},
                    [](TrainOptions& t) { t.loss = "fused"; }}});
  {
    Family f;
    if (o.optimizer == "adamw" || o.optimizer == "adam")
      f.push_back({"fused AdamW (torch.optim.AdamW(fused=True)): no foreach temporaries", 1, {"--optimizer", "adamw-fused"},
                   [](TrainOptions& t) { t.optimizer = "adamw-fused"; }});
    if (o.optimizer != "adamw-8bit" && o.optimizer != "paged-adamw-8bit" && o.optimizer != "sgd")
      f.push_back({"8-bit AdamW (bitsandbytes): 2 bytes of moments per parameter instead of 8", 2, {"--optimizer", "adamw-8bit"},
                   [](TrainOptions& t) { t.optimizer = "adamw-8bit"; }});
    if (o.optimizer != "paged-adamw-8bit" && o.optimizer != "sgd")
      f.push_back({"paged 8-bit AdamW (bitsandbytes): moments in unified memory, evicted to the host under pressure", 2,
                   {"--optimizer", "paged-adamw-8bit"}, [](TrainOptions& t) { t.optimizer = "paged-adamw-8bit"; }});
    if (!f.empty()) out.push_back(f);
  }
  if (o.offload_optimizer == "none")
    out.push_back({{"optimizer states and master weights in host memory (CPU offload): the step waits for the CPU optimizer", 2,
                    {"--offload-optimizer", "cpu"}, [](TrainOptions& t) { t.offload_optimizer = "cpu"; }}});
  if (o.activation_offload == false)
    out.push_back({{"saved activations in pinned host memory (activation offloading): PCIe traffic each layer", 2,
                    {"--activation-offload"}, [](TrainOptions& t) { t.activation_offload = true; }}});
  if (o.precision != "pure-bf16" && o.precision != "pure-fp16" && o.precision != "fp8")
    out.push_back({{"pure bf16 (weights and moments in bf16, no fp32 master): caveat: updates below bf16's resolution "
                    "round away; use Kahan summation or stochastic rounding for long runs", 3,
                    {"--precision", "pure-bf16"}, [](TrainOptions& t) { t.precision = "pure-bf16"; }}});
  if (o.run.nodes == 1 && w.tp == 1 && w.pp == 1 && w.cp == 1 && w.ep == 1 && o.fsdp.empty()) {
    Family f;
    for (std::int64_t k = w.gpus * 2; k <= 8; k *= 2) {
      const std::int64_t scale = k / w.gpus;
      const bool keep = w.grad_accum % scale == 0;  // the same tokens per step where the accumulation divides
      Change c{fmt::format("ZeRO-3 / FSDP full shard over {} GPUs{}", k, keep ? "" : " (more tokens per step)"), 3,
               {"--gpus", num(k), "--zero", "3"}, nullptr};
      if (keep && scale > 1) c.flags.insert(c.flags.end(), {"--grad-accum", num(w.grad_accum / scale)});
      c.apply = [k, keep, scale](TrainOptions& t) {
        t.workload.gpus = k;
        t.workload.zero = 3;
        if (keep) t.workload.grad_accum /= scale;
      };
      f.push_back(c);
    }
    if (!f.empty()) out.push_back(f);
  }
  if (!lora) {
    Family f{{"LoRA rank 16 on every linear: trains adapters, the base frozen", 4,
              {"--lora-rank", "16", "--lora-targets", "all-linear"}, [](TrainOptions& t) {
                t.workload.lora.rank = 16;
                t.lora_targets = "all-linear";
              }},
             {"QLoRA rank 16 on every linear: adapters over an NF4 base", 5,
              {"--lora-rank", "16", "--lora-targets", "all-linear", "--qlora"}, [](TrainOptions& t) {
                t.workload.lora.rank = 16;
                t.lora_targets = "all-linear";
                t.workload.lora.qlora = true;
              }}};
    if (tokens)
      for (Change& c : f) {
        c.flags.insert(c.flags.end(), {"--tokens", num(*tokens)});
        c.apply = [apply = c.apply, n = num(*tokens)](TrainOptions& t) {
          apply(t);
          t.run.tokens = n;
        };
      }
    out.push_back(f);
  } else if (!w.lora.qlora) {
    out.push_back({{"QLoRA: the frozen base in NF4", 4, {"--qlora"}, [](TrainOptions& t) { t.workload.lora.qlora = true; }}});
  }
  {
    Family f;
    for (std::int64_t s = w.seq / 2; s >= 512 && s * 2 <= w.seq; s /= 2)
      f.push_back({fmt::format("sequences of {} tokens: longer examples are cut or split", s), 6, {"--seq", num(s)},
                   [s](TrainOptions& t) { t.workload.seq = s; }});
    if (!f.empty()) out.push_back(f);
  }
  return out;
}

// A changed setup's full estimate (the same report `gpuplan train` prints with its flags), or none when the
// combination is not a valid setup.
struct Outcome {
  std::vector<const Change*> changes;
  nlohmann::json report;
  bool fits = false;
  // The micro-batch train chose for the changed setup when no --batch set it (plan.h choose_micro_batch: it moves
  // with what the change frees or takes): the entry states it with --batch, so that its flags name the run.
  std::optional<std::int64_t> chosen_batch;
};

std::optional<Outcome> evaluate(const TrainOptions& base, const Catalog& cat, std::vector<const Change*> changes) {
  TrainOptions t = base;
  t.advise = false;
  for (const Change* c : changes) c->apply(t);
  try {
    Outcome r{std::move(changes), train_report_with(t, &cat), false, std::nullopt};
    r.fits = r.report["fit"]["fits"].get<bool>();
    if (!t.batch) r.chosen_batch = r.report["workload"]["batch"].get<std::int64_t>();
    return r;
  } catch (const InputError&) {
    return std::nullopt;  // e.g. a combination the estimator refuses
  }
}

// Two changes that set the same flag (a traded micro-batch and ZeRO's accumulation) do not combine.
bool shares_a_flag(const Change& x, const Change& y) {
  for (const auto& f : x.flags)
    if (f.rfind("--", 0) == 0 && std::find(y.flags.begin(), y.flags.end(), f) != y.flags.end()) return true;
  return false;
}

int distance(const Outcome& o) {
  int d = 0;
  for (const Change* c : o.changes) d += c->distance;
  return d;
}

// Seconds and dollars per token of the run: entries of other token bases (a LoRA run defaults to 1B tokens) rank
// on the same footing.
double per_token(const nlohmann::json& r, const char* what) {
  if (r["time"].is_null()) return 0;  // a device without compute rates (--gpu-memory alone): no time to rank by
  const double tokens = r["compute"]["tokens"].get<double>();
  if (std::string(what) == "usd")
    return !r["cost"].is_null() ? r["cost"]["usd"].get<double>() / tokens : r["time"]["gpu_hours"].get<double>() / tokens;
  return r["time"]["seconds"].get<double>() / tokens;
}

// `batch`: the micro-batch of the setup advised on.
nlohmann::json entry(const Outcome& o, std::int64_t batch) {
  std::string text;
  std::vector<std::string> flags;
  for (const Change* c : o.changes) {
    text += (text.empty() ? "" : "; ") + c->text;
    flags.insert(flags.end(), c->flags.begin(), c->flags.end());
  }
  if (o.chosen_batch) {
    if (*o.chosen_batch != batch) text += fmt::format("; micro-batch {}, the largest that then fits", *o.chosen_batch);
    flags.insert(flags.end(), {"--batch", num(*o.chosen_batch)});
  }
  const nlohmann::json& r = o.report;
  const nlohmann::json none = {{"gpu_hours", nullptr}, {"days", nullptr}, {"step_seconds", nullptr}};
  const nlohmann::json& t = r["time"].is_null() ? none : r["time"];
  nlohmann::json cost = {{"usd", r["cost"].is_null() ? nlohmann::json(nullptr) : r["cost"]["usd"]},
                         {"usd_per_gpu_hour", r["cost"].is_null() ? nlohmann::json(nullptr) : r["cost"]["usd_per_gpu_hour"]},
                         {"gpu_hours", t["gpu_hours"]},
                         {"days", t["days"]},
                         {"tokens", r["compute"]["tokens"]}};
  return {{"change", text},
          {"flags", flags},
          {"total_bytes", r["memory"]["total_bytes"]},
          {"step_seconds", t["step_seconds"]},
          {"cost", cost}};
}

constexpr std::size_t max_entries = 10;  // the advice lists the ten best by the objective

}  // namespace

nlohmann::json train_advice(const TrainOptions& o, const nlohmann::json& report) {
  const std::string& by = o.objective;  // validated by run_train
  std::optional<std::int64_t> default_tokens;
  if (o.run.tokens.empty() && o.run.epochs <= 0 && !o.run.fine_tune && o.workload.lora.rank == 0)
    default_tokens = report["compute"]["tokens"].get<std::int64_t>();
  const std::int64_t batch = report["workload"]["batch"].get<std::int64_t>();
  const std::vector<Family> fams = families(o, default_tokens, batch);
  const Catalog cat = load_catalog(o.fit.catalogs);
  std::vector<Outcome> fitting;
  std::vector<std::size_t> alone;  // families none of whose changes fits alone
  for (std::size_t i = 0; i < fams.size(); ++i) {
    bool found = false;
    for (const Change& c : fams[i]) {
      auto r = evaluate(o, cat, {&c});
      if (r && r->fits) {
        fitting.push_back(std::move(*r));
        found = true;
        break;
      }
    }
    if (!found && !fams[i].empty()) alone.push_back(i);
  }
  // Two changes where no single one fits: each pair of the families that did not fit alone, mildest first in each.
  int budget = 300;  // estimates at most (~1 ms each)
  if (fitting.size() < max_entries / 2)
    for (std::size_t a = 0; a < alone.size(); ++a)
      for (std::size_t b = a + 1; b < alone.size(); ++b) {
        bool found = false;
        for (const Change& x : fams[alone[a]])
          for (const Change& y : fams[alone[b]]) {
            if (found || shares_a_flag(x, y)) continue;
            if (--budget < 0) break;
            auto r = evaluate(o, cat, {&x, &y});
            if (r && r->fits) {
              fitting.push_back(std::move(*r));
              found = true;
            }
          }
      }
  auto key = [&](const Outcome& x) {
    const double d = distance(x);
    if (by == "cheapest") return std::tuple(per_token(x.report, "usd"), per_token(x.report, "seconds"), d);
    if (by == "fastest") return std::tuple(per_token(x.report, "seconds"), per_token(x.report, "usd"), d);
    return std::tuple(double(distance(x)), per_token(x.report, "seconds"), per_token(x.report, "usd"));
  };
  std::stable_sort(fitting.begin(), fitting.end(), [&](const Outcome& a, const Outcome& b) { return key(a) < key(b); });
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t i = 0; i < fitting.size() && i < max_entries; ++i) out.push_back(entry(fitting[i], batch));
  return out;
}

}  // namespace gpuplan::cli
