// Activations: the bytes autograd keeps for backward in one decoder layer, per token, from what PyTorch saves for
// HF transformers' modules. Checked tensor by tensor with saved_tensors_hooks on an H200 (tools/measure, --probe):
// Llama, Qwen2/3, Gemma 2, Phi-3, GPT-2, GPT-NeoX, Mixtral, Qwen2-MoE and DeepSeek-V3 layers.
#pragma once
#include <string>
#include <vector>

#include "../model.h"
#include "workload.h"

namespace gpuplan {

namespace detail {

struct ActivationDtypes {
  double c;       // matmul outputs (16-bit under autocast)
  double r;       // residual stream and norm outputs (the parameter dtype)
  bool autocast;  // torch.autocast: every linear casts its own copy of a non-16-bit input
};

inline bool lora_targets_module(const LoraSpec& l, const std::string& module) {
  if (l.rank == 0) return false;
  for (const auto& t : l.targets)
    if (t == "all-linear" || t == module) return true;
  return false;
}

enum class AttentionKernel { flash, efficient, math, eager };

// Which kernel PyTorch's scaled_dot_product_attention picks (torch 2.11): flash needs 16-bit inputs and
// head_dim ≤ 256; memory-efficient also takes fp32 but not grouped-query (enable_gqa) inputs; else math. It picks
// per call, so per layer where layers differ (Gemma 4's full-attention layers: head_dim 512); `layer` −1 asks for
// the kernel of the model's widest layer (what the whole model can count on).
inline AttentionKernel sdpa_backend(const ModelSpec& s, Attention requested, double compute_bytes, std::int64_t layer = -1) {
  if (requested == Attention::eager) return AttentionKernel::eager;
  LayerShape shape = s.shape(layer >= 0 ? layer : 0);
  if (layer < 0)
    for (const LayerShape& sh : s.layer_shapes)
      if (sh.head_dim > shape.head_dim || (sh.head_dim == shape.head_dim && sh.kv_heads < shape.kv_heads)) shape = sh;
  if (compute_bytes < 4 && shape.head_dim <= 256) return AttentionKernel::flash;
  if (shape.kv_heads == s.heads) return AttentionKernel::efficient;
  return AttentionKernel::math;
}

struct LayerActivation {
  double per_token = 0;      // bytes per token saved for backward (linear in tokens)
  double score_element = 0;  // bytes per attention-score element (eager / math kernels), per head per query per key
  std::vector<double> tensors;  // per_token split into the tensors it is made of (for the allocator model)
};

class LayerActivationModel {
 public:
  LayerActivationModel(const ModelSpec& s, const TrainingWorkload& w, const ActivationDtypes& d)
      : s_(s), w_(w), d_(d), full_ft_(w.lora.rank == 0) {}

  // Depends on `l` only through layer_kind (layer_tensors computes each kind once).
  LayerActivation layer(std::int64_t l) const {
    LayerActivation a;
    const double h = double(s_.hidden), c = d_.c;
    const double hq = double(s_.q_dim(l));
    const double hv = s_.mla_enabled ? double(s_.heads * s_.mla.v_head_dim) : hq;
    // A layer reading an earlier layer's K and V (Gemma 4) saves no k or v of its own: they are that layer's.
    const double hkv = s_.mla_enabled ? double(s_.heads * s_.head_dim) : s_.shape(l).shares_kv ? 0.0 : double(s_.kv_dim(l));
    const double drop = s_.dropout > 0 ? 1.0 : 0.0;  // bool mask per element

    // --- Attention block ---
    if (s_.family == Family::gpt_neox && s_.parallel_residual) {
      // Both norms read the layer input, which native layer_norm keeps once.
      add(a, d_.r * h);
      add(a, linear_input(h, {"query_key_value"}));
      add(a, linear_input(h, {"dense_h_to_4h"}));
    } else {
      add(a, norm(h), 2);
      add(a, linear_input(h, attention_input_modules()), int(attention_input_modules().size()));
    }
    if (s_.mla_enabled) add(a, mla_latents(), 4);
    if (s_.qk_norm) add(a, (4.0 + (full_ft_ ? d_.r : 0.0)) * (hq + hkv), 2);  // RMSNorm over head_dim on q, k
    switch (sdpa_backend(s_, w_.attention, c, l)) {
      case AttentionKernel::flash:
      case AttentionKernel::efficient:
        // q, k, v at native GQA width (torch ≥ 2.5 SDPA enable_gqa), output O (shared with o_proj's input: the
        // kernel's [b, s, heads, d] layout makes the transpose free) and the fp32 log-sum-exp per head.
        add(a, c * hq);
        add(a, 2 * c * hkv, 2);
        // Phi-3 slices q, k and v out of one fused qkv_proj output: v stays a view of it, so SDPA keeping v keeps
        // the whole fused tensor (q and k parts included) alive.
        if (s_.model_type == "phi3") add(a, c * (hq + hkv));
        // GPT-NeoX under autocast keeps two more 16-bit [tokens, h] tensors per layer than its fp32 run: the merged
        // attention output copied for `dense` and one more cast (probed with saved_tensors_hooks on H200).
        if (s_.family == Family::gpt_neox && d_.autocast && full_ft_) add(a, 2 * c * h, 2);
        add(a, c * hv);
        add(a, 4.0 * double(s_.heads));
        if (!full_ft_) add(a, projection_input(hv, attention_output_module()));
        break;
      case AttentionKernel::math:
        // SDPA's math fallback (fp32 with GQA): scaled q, k/v repeated to every head, the softmax output kept in
        // fp32; the output is transposed into a contiguous copy for o_proj.
        add(a, c * 3 * hq, 3);
        add(a, projection_input(hv, "o_proj"));
        a.score_element = c;
        break;
      case AttentionKernel::eager: {
        // HF eager: k/v repeated (repeat_kv); Llama-family code takes the softmax in fp32 (dtype=torch.float32)
        // and keeps its 16-bit cast for probs @ V; GPT-2 takes it in the compute dtype, or fp32 under autocast
        // (softmax is on autocast's fp32 list). Dropout keeps a bool mask and its output.
        add(a, c * 3 * hq, 3);
        add(a, projection_input(hv, s_.family == Family::gpt2 ? "c_proj" : "o_proj"));
        // gpt-oss appends its sink logit and takes the softmax in the compute dtype (keeping only its output).
        const double softmax = ((s_.family == Family::llama && !s_.attn_sinks) || d_.autocast) ? 4.0 : c;
        // Gemma 2 soft-caps the scores (cap · tanh(scores / cap)): tanh's output is kept too.
        const double softcap = s_.attn_logit_softcap > 0 ? c : 0.0;
        a.score_element = softmax + (softmax != c ? c : 0.0) + drop * (1.0 + c) + softcap;
        break;
      }
    }
    add(a, drop * h);  // residual dropout after the attention projection (GPT-2 resid_pdrop)
    if (s_.norms_per_layer >= 4) add(a, post_norm(h), 2);  // Gemma 2/3/4 post-attention norm

    // --- Feed-forward block ---
    if (!(s_.family == Family::gpt_neox && s_.parallel_residual)) {
      const auto inputs = s_.is_moe_layer(l) ? moe_input_modules() : ffn_input_modules();
      add(a, norm(h), 2);
      add(a, linear_input(h, inputs), d_.autocast ? int(inputs.size()) : 1);
    }
    if (s_.is_moe_layer(l) && s_.moe.dense_routing) {
      // HF Llama 4 runs all tokens through all E experts: the repeated input, the score-weighted input (kept
      // by bmm when the experts train), gate_up (kept whole by its split), the activation and the product
      // (when they train); probed on H100: [E·T, h], [E, T, 2I], [E, T, I] per layer.
      const auto& m = s_.moe;
      const double E = double(m.experts), I = double(m.intermediate);
      add(a, E * c * (h + 3.0 * I + (full_ft_ ? h + I : 0.0)), 4);
      add(a, 4.0 * 2.0 * E);  // router logits and sigmoid scores, fp32
      if (m.shared_experts > 0) add(a, ffn(double(m.shared_intermediate * m.shared_experts), "down_proj"), 4);
    } else if (s_.is_moe_layer(l)) {
      const auto& m = s_.moe;
      const double k = double(m.experts_per_token);
      // Each routed token's input is gathered per expert and each expert's output is kept for the weighting by
      // the router probabilities; router logits and probabilities are fp32 [tokens, experts].
      add(a, 2.0 * c * h * k, 2);
      add(a, 2.0 * 4.0 * double(m.experts), 2);
      // gpt-oss's clamped GLU (clamp, sigmoid(α·gate), gate·σ, (up + 1)·glu, masked fill of unrouted slots)
      // keeps gate_up whole and five I-wide tensors per routed token (probed on H100).
      if (s_.model_type == "gpt_oss") add(a, k * c * double(m.intermediate) * 7.0, 4);
      else add(a, ffn(double(m.intermediate), "down_proj") * k, 4);
      if (s_.model_type.rfind("deepseek", 0) == 0) add(a, 4.0 * h);  // weighted sum accumulated in fp32
      if (m.shared_experts > 0) add(a, ffn(double(m.shared_intermediate * m.shared_experts), "down_proj"), 4);
      if (m.shared_gate) add(a, c * h);  // sigmoid(gate) · shared output keeps the output
    } else {
      add(a, ffn(double(s_.intermediate_at(l)), s_.family == Family::gpt2 ? "c_proj"
                                                  : s_.family == Family::gpt_neox ? "dense_4h_to_h" : "down_proj"),
          4);
    }
    add(a, drop * h);  // residual dropout after the MLP
    if (s_.norms_per_layer >= 4) add(a, post_norm(h), 2);

    // PEFT LoRA: lora_B keeps lora_A's rank-r output (adapter dtype) for every adapted linear.
    if (!full_ft_) {
      for (const auto& g : layer_params(s_, l))
        if (g.linear && !g.expert && lora_targets_module(w_.lora, g.module))
          add(a, adapter_bytes() * double(w_.lora.rank));
    }
    return a;
  }

  static void add(LayerActivation& a, double bytes, int pieces = 1) {
    if (bytes <= 0) return;
    a.per_token += bytes;
    pieces = pieces < 1 ? 1 : pieces;
    for (int i = 0; i < pieces; ++i) a.tensors.push_back(bytes / pieces);
  }

  // Outside the layers: the final norm before lm_head (its output is lm_head's input).
  double final_norm() const { return norm(double(s_.hidden)) + linear_input(double(s_.hidden), {"lm_head"}); }

 private:
  // A norm keeps its input for backward: HF RMSNorm upcasts to fp32 (4 B); Gemma multiplies by (1 + w) in fp32,
  // Llama by w in the stream dtype, keeping the normalised tensor for the weight's gradient (only when the norm
  // weight trains). LayerNorm's native kernel keeps its input (and per-token mean/rstd).
  double norm(double width) const {
    if (s_.norm == NormKind::layer) return d_.r * width;
    const bool gemma = s_.model_type.rfind("gemma", 0) == 0;
    return 4.0 * width + (full_ft_ ? (gemma ? 4.0 : d_.r) * width : 0.0);
  }
  // Gemma's post-norms feed the residual add: only the fp32 input and normalised tensor stay.
  double post_norm(double width) const { return 4.0 * width + (full_ft_ ? 4.0 * width : 0.0); }

  // An input consumed by linears. A trainable linear keeps its input for the weight gradient; without autocast
  // the consumers share one tensor (r B), under autocast each casts the fp32 input into its own 16-bit copy.
  // A frozen (LoRA base) linear keeps only its weight; its PEFT adapter casts the input to the adapter dtype
  // (fp32, or 16 bit under autocast) for lora_A, one copy per adapted module (probed on H200).
  double linear_input(double width, const std::vector<std::string>& consumers) const {
    if (!full_ft_) {
      double bytes = 0;
      for (const auto& m : consumers)
        if (lora_targets_module(w_.lora, m)) bytes += adapter_bytes() * width;
      return bytes;
    }
    if (d_.autocast && d_.r != d_.c) return double(consumers.size()) * d_.c * width;
    return d_.r * width;
  }
  // The input of a linear fed by a 16-bit tensor that is saved anyway or not at all (o_proj, down_proj): kept for
  // a trainable linear, cast for an adapter.
  double projection_input(double width, const std::string& module) const {
    if (full_ft_) return d_.c * width;
    return lora_targets_module(w_.lora, module) ? adapter_bytes() * width : 0.0;
  }
  double adapter_bytes() const { return d_.autocast ? d_.c : 4.0; }  // PEFT adapters are fp32

  std::vector<std::string> attention_input_modules() const {
    if (s_.mla_enabled) return {s_.mla.q_lora_rank > 0 ? "q_a_proj" : "q_proj", "kv_a_proj_with_mqa"};
    switch (s_.family) {
      case Family::gpt2: return {"c_attn"};
      case Family::gpt_neox: return {"query_key_value"};
      case Family::llama: break;
    }
    if (s_.model_type == "phi3") return {"qkv_proj"};
    return {"q_proj", "k_proj", "v_proj"};
  }
  std::string attention_output_module() const {
    switch (s_.family) {
      case Family::gpt2: return "c_proj";
      case Family::gpt_neox: return "dense";
      case Family::llama: break;
    }
    return "o_proj";
  }
  std::vector<std::string> ffn_input_modules() const {
    switch (s_.family) {
      case Family::gpt2: return {"c_fc"};
      case Family::gpt_neox: return {"dense_h_to_4h"};
      case Family::llama: break;
    }
    if (s_.model_type == "phi3") return {"gate_up_proj"};
    if (s_.mlp == MlpKind::plain) return {"up_proj"};
    return {"gate_proj", "up_proj"};
  }
  std::vector<std::string> moe_input_modules() const {
    std::vector<std::string> m{"gate"};  // the router reads the normalised input
    if (s_.moe.shared_experts > 0) {
      m.push_back("shared_experts.gate_proj");
      m.push_back("shared_experts.up_proj");
    }
    if (s_.moe.shared_gate) m.push_back("shared_expert_gate");
    return m;
  }

  // The FFN's own tensors. Gated (SwiGLU/GeGLU): gate output (activation input), activation output and up
  // output (kept by the product, gradients flow through both) and the product (down_proj's input, when
  // down_proj trains). Plain GELU: input and output. GPT-2's NewGELU is a chain of pointwise ops keeping
  // pow's input, tanh's output and 1 + tanh (fp32 under autocast, where pow runs in fp32) and 0.5·x.
  double ffn(double width, const std::string& down) const {
    const double c = d_.c;
    const double out = projection_input(width, down);
    if (s_.mlp == MlpKind::gated) return 3.0 * c * width + out;
    if (s_.activation == "gelu_new") {
      const double p = d_.autocast ? 4.0 : c;
      return (3.0 * p + c) * width + out;
    }
    return c * width + out;
  }

  // DeepSeek MLA: the compressed q and kv latents go through their own RMSNorms (fp32 input kept) and into the
  // up-projections; the rope part of k is broadcast to every head before attention.
  double mla_latents() const {
    const auto& m = s_.mla;
    const double c = d_.c;
    double bytes = 0;
    if (m.q_lora_rank > 0) bytes += 4.0 * double(m.q_lora_rank) + (full_ft_ ? d_.r : 0.0) * double(m.q_lora_rank) + c * double(m.q_lora_rank);
    bytes += 4.0 * double(m.kv_lora_rank) + (full_ft_ ? d_.r : 0.0) * double(m.kv_lora_rank) + c * double(m.kv_lora_rank);
    return bytes;
  }

  const ModelSpec& s_;
  const TrainingWorkload& w_;
  ActivationDtypes d_;
  bool full_ft_;
};

}  // namespace detail

}  // namespace gpuplan
