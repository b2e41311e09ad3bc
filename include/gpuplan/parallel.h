// Parallelism: which part of the model a GPU holds (tensor, pipeline, expert parallelism), how many micro-batches a
// pipeline stage keeps in flight, the pipeline bubble, and what each GPU sends per optimizer step in every
// collective, with the time that takes on the link between the GPUs (NVLink inside a node, the network between).
#pragma once
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hardware.h"
#include "memory/workload.h"
#include "model.h"
#include "units.h"

namespace gpuplan {

// ---------------------------------------------------------------------------------------------------------------
// Pipeline stages

struct PipelineStage {
  std::int64_t index = 0;        // 0 = first stage
  std::int64_t first_layer = 0;  // decoder layers [first_layer, first_layer + layers)
  std::int64_t layers = 0;
  bool embedding = true;         // holds the token embedding (first stage)
  bool head = true;              // holds the final norm, lm_head and loss (last stage)
  double in_flight = 1;          // micro-batches whose saved activations the stage holds at its peak
};

// Micro-batches in flight on pipeline rank r under 1F1B (Narayanan et al. 2021 §2.2): warm-up forwards pp − r,
// capped by the micro-batches per step. Interleaved (v model chunks per GPU, Megatron-LM schedules.py): the
// warm-up is 2·(pp − r − 1) + (v − 1)·pp chunk-forwards plus the one in progress, each chunk 1/v of the stage —
// on the first stage pp + (pp − 1)/v stage-equivalents, Megatron's interleaving penalty 1 + (pp − 1)/(pp·v).
inline double in_flight_microbatches(std::int64_t r, std::int64_t pp, std::int64_t v, std::int64_t microbatches) {
  if (pp <= 1) return 1;
  if (v <= 1) return double(std::min(pp - r, microbatches));
  const double chunks = double(std::min(2 * (pp - r - 1) + (v - 1) * pp + 1, microbatches * v));
  return chunks / double(v);
}

// Stages worth evaluating: the first (the most micro-batches in flight; Megatron gives it ceil(L/pp) layers unless
// --pp-first-layers says otherwise) and the last (lm_head, logits and loss), which gets an even share of the rest. With both ends given, the middle
// stages must share the remaining layers evenly, as Megatron requires.
inline std::vector<PipelineStage> pipeline_stages(std::int64_t layers, const TrainingWorkload& w) {
  if (w.pp <= 1) return {PipelineStage{0, 0, layers, true, true, 1}};
  const std::int64_t first = w.pp_first_layers > 0 ? w.pp_first_layers : (layers + w.pp - 1) / w.pp;
  const std::int64_t rest = layers - first;
  std::int64_t last = rest / (w.pp - 1);  // the other stages share the rest evenly; the middle ones take any remainder
  if (w.pp_last_layers > 0) last = w.pp_last_layers;
  const std::int64_t middle = layers - first - last;
  if (first < 1 || last < 1 || middle < (w.pp - 2) || (w.pp == 2 && middle != 0) ||
      (w.pp > 2 && (w.pp_first_layers > 0 || w.pp_last_layers > 0) && middle % (w.pp - 2) != 0))
    throw InputError("the pipeline split (" + std::to_string(first) + " layers first, " + std::to_string(last) +
                     " last) leaves " + std::to_string(middle) + " of the model's " + std::to_string(layers) +
                     " layers for " + std::to_string(w.pp - 2) + " middle stages: they must share them evenly, at "
                     "least one each");
  return {PipelineStage{0, 0, first, true, false, in_flight_microbatches(0, w.pp, w.vpp, w.grad_accum)},
          PipelineStage{w.pp - 1, layers - last, last, false, true, in_flight_microbatches(w.pp - 1, w.pp, w.vpp, w.grad_accum)}};
}

// Idle fraction of a pipeline step: (pp − 1)/(v·m) of the ideal time (Narayanan et al. 2021, §2.2.1–2.2.2).
inline double pipeline_bubble(const TrainingWorkload& w) {
  return w.pp <= 1 ? 0.0 : double(w.pp - 1) / double(w.vpp * w.grad_accum);
}

// The part of the model one GPU holds, as a model of its own: Megatron tensor parallelism splits the attention heads
// (q/k/v column-parallel, the output row-parallel), the FFN width and the vocabulary (vocab-parallel embedding and
// lm_head) across the tp ranks; norms, the router and MLA's down-projections stay replicated (Shoeybi et al. 2019
// §3). A pipeline stage holds its layers only; with pp > 1 the last stage keeps its own copy of a tied embedding for
// the output layer (Megatron: embedding grads all-reduced between first and last stage).
inline ModelSpec rank_model(const ModelSpec& s, const TrainingWorkload& w, const PipelineStage& st) {
  ModelSpec r = s;
  const std::int64_t tp = w.tp;
  auto split = [&](std::int64_t v, const char* what) {
    if (v % tp != 0)
      throw InputError("--tp " + std::to_string(tp) + " does not divide the model's " + what + " (" +
                       std::to_string(v) + ")");
    return v / tp;
  };
  if (tp > 1) {
    r.heads = split(s.heads, "attention heads");
    r.kv_heads = split(s.kv_heads, "key/value heads");
    r.intermediate = split(s.intermediate, "FFN width");
    for (LayerShape& sh : r.layer_shapes) {  // layers of their own shape (Gemma 4's full-attention layers)
      sh.kv_heads = split(sh.kv_heads, "key/value heads of a layer");
      sh.intermediate = split(sh.intermediate, "FFN width of a layer");
    }
    if (s.moe.experts > 0) {
      r.moe.intermediate = split(s.moe.intermediate, "expert FFN width");
      r.moe.shared_intermediate = s.moe.shared_experts > 0 ? split(s.moe.shared_intermediate, "shared-expert FFN width") : 0;
    }
    r.vocab = (s.vocab + tp - 1) / tp;  // Megatron pads the vocabulary to a multiple of tp (and 128)
  }
  if (w.ep > 1 && s.moe.experts == 0) throw InputError("--ep needs a mixture-of-experts model");
  if (w.ep > 1 && s.moe.experts % w.ep != 0)
    throw InputError("--ep " + std::to_string(w.ep) + " does not divide the model's " + std::to_string(s.moe.experts) +
                     " experts");
  if (w.pp > 1) {
    if (s.layers < w.pp) throw InputError("--pp " + std::to_string(w.pp) + " exceeds the model's " + std::to_string(s.layers) + " layers");
    r.layers = st.layers;
    auto slice = [&](const std::vector<bool>& v) {
      return v.empty() ? v : std::vector<bool>(v.begin() + st.first_layer, v.begin() + st.first_layer + st.layers);
    };
    r.moe_layers = slice(s.moe_layers);
    r.sliding_layers = slice(s.sliding_layers);
    if (!s.shape_of.empty())
      r.shape_of.assign(s.shape_of.begin() + st.first_layer, s.shape_of.begin() + st.first_layer + st.layers);
    r.tied_embeddings = false;
  }
  return r;
}

// The model with the widths tensor parallelism splits (heads, FFN, experts' FFN) doubled. Per-layer parameter and
// activation counts are linear in those widths, so f(wide) − f(model) is the split part and 2·f(model) − f(wide)
// the replicated part (norms, router, hidden-width tensors).
inline ModelSpec doubled_split_widths(const ModelSpec& s) {
  ModelSpec wide = s;
  wide.heads *= 2;
  wide.kv_heads *= 2;
  wide.intermediate *= 2;
  wide.moe.intermediate *= 2;
  wide.moe.shared_intermediate *= 2;
  for (LayerShape& sh : wide.layer_shapes) {
    sh.kv_heads *= 2;
    sh.intermediate *= 2;
  }
  return wide;
}

// ---------------------------------------------------------------------------------------------------------------
// Communication

enum class CommKind { data, tensor, pipeline, context, expert };

inline const char* comm_kind_name(CommKind k) {
  switch (k) {
    case CommKind::data: return "data";
    case CommKind::tensor: return "tensor";
    case CommKind::pipeline: return "pipeline";
    case CommKind::context: return "context";
    case CommKind::expert: return "expert";
  }
  return "?";
}

// The words are static text: the planner builds these for every layout it screens.
struct Communication {
  CommKind kind = CommKind::data;
  std::string_view collectives;  // which collectives, in words
  Bytes bytes_per_gpu{0};        // sent (= received) per GPU per optimizer step
  std::string_view overlap;      // whether frameworks hide it behind compute, in words
  bool across_nodes = false;     // the group spans nodes (Megatron rank order: tp innermost, then cp, dp, pp)
  std::optional<Seconds> time;   // at the link's one-way bandwidth, without overlap
  std::optional<ByteRate> bandwidth;
  std::string link;
};

// Ring collectives move (N−1)/N of the buffer per GPU for a reduce-scatter or an all-gather, twice that for an
// all-reduce (Patarasuk & Yuan 2009). DDP all-reduces the gradients; ZeRO-1/2 reduce-scatter the gradients and
// all-gather the updated parameters (the same volume); ZeRO-3 also all-gathers the parameters in forward and again
// in backward: 1.5× (ZeRO paper §7). `trainable_params` is what one GPU's data-parallel group replicates (its
// tensor/pipeline shard).
inline double data_parallel_bytes(std::int64_t dp, int zero, double trainable_params, double param_bytes,
                                  double grad_bytes) {
  if (dp <= 1) return 0.0;
  const double ring = double(dp - 1) / double(dp);
  const double grads = trainable_params * grad_bytes, params = trainable_params * param_bytes;
  return zero == 0 ? 2 * ring * grads : zero < 3 ? ring * (grads + params) : ring * (2 * params + grads);
}

inline Communication data_parallel_communication(const TrainingWorkload& w, double trainable_params,
                                                 double param_bytes, double grad_bytes) {
  Communication c;
  c.kind = CommKind::data;
  c.overlap = "DDP and FSDP overlap it with backward compute";
  c.collectives = w.dp() <= 1 ? "none (one data-parallel rank)"
                  : w.zero == 0 ? "all-reduce of the gradients"
                  : w.zero < 3 ? "reduce-scatter of the gradients, all-gather of the updated parameters"
                               : "all-gather of the parameters in forward and in backward, reduce-scatter of the gradients";
  c.bytes_per_gpu = Bytes(data_parallel_bytes(w.dp(), w.zero, trainable_params, param_bytes, grad_bytes));
  return c;
}

// Model-parallel traffic per optimizer step (m = grad_accum micro-batches of b·s/cp tokens per GPU, c-byte
// activations, L_stage layers on the GPU).
//  tensor:   Megatron's f/g operators all-reduce a [tokens, h] activation twice per layer in forward and twice in
//            backward (Shoeybi et al. 2019 §3), two more when full recomputation repeats the forward; sequence
//            parallelism swaps each for an all-gather + reduce-scatter of the same volume (Korthikanti et al. §4.2.2).
//  pipeline: each micro-batch sends its activation forward and receives its gradient back, once per model chunk
//            (÷tp with sequence parallelism: only the shard crosses).
//  context:  ring attention passes the K/V blocks around the cp ranks in forward, and K/V plus their gradients in
//            backward (Liu et al. 2023; Megatron-Core / torch context parallel).
//  expert:   token dispatch and combine all-to-alls in forward and in backward, (ep−1)/ep of the routed tokens leave
//            the GPU (Lepikhin et al. 2020).
inline Communication collective(CommKind kind, std::string_view what, Bytes bytes, std::string_view overlap) {
  Communication c;
  c.kind = kind;
  c.collectives = what;
  c.bytes_per_gpu = bytes;
  c.overlap = overlap;
  return c;
}

// Tensor-parallel bytes per GPU per step: m micro-batches × L layers × (4, or 6 with full recomputation)
// collectives of a [tokens, h] activation of c bytes, each moving 2·(t − 1)/t of it.
inline double tensor_parallel_bytes(std::int64_t tp, double microbatches, double layers, bool full_recompute,
                                    double tokens, double hidden, double c) {
  if (tp <= 1) return 0.0;
  const double t = double(tp);
  return microbatches * layers * (4.0 + (full_recompute ? 2.0 : 0.0)) * 2.0 * (t - 1) / t * tokens * hidden * c;
}

// Expert-parallel bytes per GPU per step: 4 all-to-alls (dispatch, combine; forward, backward) per MoE layer and
// micro-batch, (ep − 1)/ep of the top-k routed token copies leaving the GPU.
inline double expert_parallel_bytes(std::int64_t ep, double microbatches, double moe_layers, double tokens,
                                    double experts_per_token, double hidden, double c) {
  if (ep <= 1) return 0.0;
  const double e = double(ep);
  return microbatches * moe_layers * 4.0 * (e - 1) / e * tokens * experts_per_token * hidden * c;
}

inline std::vector<Communication> model_parallel_communication(const ModelSpec& s, const TrainingWorkload& w,
                                                               std::int64_t stage_layers, double activation_bytes) {
  std::vector<Communication> out;
  const double m = double(w.grad_accum), L = double(stage_layers), h = double(s.hidden), c = activation_bytes;
  const double tokens = double(w.batch) * std::ceil(double(w.seq) / double(w.cp));
  const double act = tokens * h * c;
  if (w.tp > 1)
    out.push_back(collective(CommKind::tensor,
                   w.sp ? "all-gather + reduce-scatter of the layer activations (sequence parallel)"
                        : "all-reduce of the layer activations",
                   Bytes(tensor_parallel_bytes(w.tp, m, L, w.recompute == Recompute::full, tokens, h, c)),
                   "on the critical path (Megatron without TP communication overlap)"));
  if (w.pp > 1)
    out.push_back(collective(CommKind::pipeline, "point-to-point send/receive of activations and their gradients",
                   Bytes(m * double(w.vpp) * 2.0 * act / (w.sp ? double(w.tp) : 1.0)),
                   "overlapped with compute in the steady state; the bubble is reported separately"));
  if (w.cp > 1) {
    const double kv = tokens * 2.0 * double(s.kv_dim()) / double(w.tp) * c;  // this GPU's K and V block
    out.push_back(collective(CommKind::context, "ring exchange of K/V blocks (forward) and of K/V and their gradients (backward)",
                   Bytes(m * L * 3.0 * double(w.cp - 1) * kv),
                   "overlapped with the attention blocks of the ring"));
  }
  const std::int64_t moe_layers = s.moe_layer_count();
  if (w.ep > 1 && moe_layers > 0) {
    const double moe_on_stage = double(moe_layers) * L / double(s.layers);
    out.push_back(collective(CommKind::expert, "all-to-all dispatch and combine of routed tokens, forward and backward",
                   Bytes(expert_parallel_bytes(w.ep, m, moe_on_stage, tokens / (w.sp ? double(w.tp) : 1.0),
                                               double(s.moe.experts_per_token), h, c)),
                   "on the critical path"));
  }
  return out;
}

// Which groups span nodes: Megatron orders ranks tp (innermost), cp, dp (with ep inside), pp (outermost); a group
// whose ranks are stride × size apart stays inside a node of `gpus_per_node` when stride × size ≤ gpus_per_node.
inline bool group_spans_nodes(const Communication& c, const TrainingWorkload& w, std::int64_t gpus_per_node) {
  const std::int64_t tp = w.tp, cp = w.cp, dp = w.dp();
  std::int64_t extent = 1;
  switch (c.kind) {
    case CommKind::tensor: extent = tp; break;
    case CommKind::context: extent = tp * cp; break;
    case CommKind::expert: extent = tp * cp * w.ep; break;
    case CommKind::data: extent = tp * cp * dp; break;
    case CommKind::pipeline: extent = w.gpus; break;
  }
  return extent > gpus_per_node;
}

// Per GPU, one way: NVLink figures in the catalog are bidirectional (NVLink 4: 900 GB/s = 450 each way). Across
// nodes the network limits: network_bandwidth per GPU (default 50 GB/s: one 400 Gb/s NIC per GPU, as in DGX H100).
// Without a GPU interconnect in the catalog, PCIe 5 x16 (32 GB/s each way).
inline constexpr double default_network_bytes_per_s = 50e9;
inline constexpr double pcie5_x16_bytes_per_s = 32e9;

struct Link {
  ByteRate bandwidth{0};
  std::string name;
};

// The bandwidth alone (the planner asks it for every layout and offering).
inline double link_bytes_per_s(const Device& d, bool across_nodes, std::optional<ByteRate> network_bandwidth) {
  const double network = network_bandwidth ? network_bandwidth->in(unit::bytes_per_s) : default_network_bytes_per_s;
  if (across_nodes) return network;
  if (!d.interconnect_bandwidth) return std::min(network, pcie5_x16_bytes_per_s);
  return d.interconnect_bandwidth->in(unit::bytes_per_s) / 2;
}

inline Link link_between(const Device& d, bool across_nodes, std::optional<ByteRate> network_bandwidth) {
  const ByteRate bw(link_bytes_per_s(d, across_nodes, network_bandwidth));
  if (across_nodes) return {bw, "network between nodes"};
  if (!d.interconnect_bandwidth) return {bw, "PCIe (no GPU interconnect in the catalog; 32 GB/s, PCIe 5 x16)"};
  return {bw, d.interconnect + " (one way)"};
}

inline void time_communication(Communication& c, const Device& d, bool across_nodes,
                               std::optional<ByteRate> network_bandwidth) {
  c.across_nodes = across_nodes;
  if (c.bytes_per_gpu.in(unit::bytes) <= 0) return;
  const Link link = link_between(d, across_nodes, network_bandwidth);
  c.bandwidth = link.bandwidth;
  c.link = link.name;
  c.time = c.bytes_per_gpu / link.bandwidth;
}

}  // namespace gpuplan
