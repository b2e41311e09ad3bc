// Whether a serving engine runs a weight format on a device: the rule that keeps offerings an engine cannot use
// out of prices and plans (cost.h prices what a setup rents; this says which devices a setup may rent).
#pragma once
#include <optional>
#include <string>

#include "hardware.h"
#include "memory/profile.h"
#include "quant.h"

namespace gpuplan {

// The tensor-core generation, told apart by the formats the catalog lists rates for (as vllm.h mxfp4_backend
// does): NVIDIA lists bf16 from Ampere (sm80) on, fp8 from Ada and Hopper (sm89, sm90), fp4 from Blackwell (the
// GB10 lists only its fp4 rate) and int8 tensor cores from Turing (sm75); AMD lists fp8 from CDNA3 (MI300).
struct TensorGeneration {
  bool sm80 = false;       // NVIDIA Ampere or newer: Marlin's kernels run
  bool sm75 = false;       // NVIDIA Turing or newer
  bool native_fp8 = false;
};

inline TensorGeneration tensor_generation(const Device& d) {
  TensorGeneration g;
  g.native_fp8 = d.peak.fp8.has_value();
  if (d.vendor == "NVIDIA") {
    g.sm80 = d.peak.bf16 || d.peak.fp8 || d.peak.fp4;
    g.sm75 = g.sm80 || d.peak.int8;
  }
  return g;
}

// Why `profile` cannot serve `weights` on `d` (a sentence to show), or nullopt when it can. Only the CUDA/ROCm
// serving engines (vLLM, SGLang) restrict; the other profiles run what their estimate models.
inline std::optional<std::string> cannot_run(const Device& d, Profile profile, WeightFormat weights) {
  if (profile != Profile::vllm && profile != Profile::sglang) return std::nullopt;
  const std::string engine = profile == Profile::vllm ? "vLLM" : "SGLang";
  // Their CUDA and ROCm builds; TPU, Neuron, Gaudi and Apple run separate backends this profile does not model.
  if (d.vendor != "NVIDIA" && d.vendor != "AMD") return engine + " is modelled on NVIDIA (CUDA) and AMD (ROCm) GPUs only";
  const TensorGeneration g = tensor_generation(d);
  const std::string format(spell<WeightFormat>(weight_format_names, weights));
  const bool nvidia = d.vendor == "NVIDIA";
  switch (weights) {
    case WeightFormat::fp8:
    case WeightFormat::mxfp4:
      // Native FP8 cores, or on NVIDIA from sm80 the Marlin weight-only kernels (vLLM
      // quantization/utils/marlin_utils_fp8.py is_fp8_marlin_supported: has_device_capability(80); mxfp4.py picks
      // Marlin below Hopper). ROCm runs FP8 and gpt-oss's MXFP4 on CDNA3 and newer only.
      if (g.native_fp8 || g.sm80) return std::nullopt;
      return engine + " runs " + format + " weights on FP8 tensor cores or, on NVIDIA, with Marlin from sm80 (Ampere): " +
             d.id + " has neither";
    case WeightFormat::nvfp4:
      // FP4 cores on Blackwell, Marlin from sm80 (marlin_utils_fp4.py is_fp4_marlin_supported; SGLang carries the
      // same NVFP4 Marlin path); ModelOpt's NVFP4 kernels are CUDA only.
      if (nvidia && g.sm80) return std::nullopt;
      return engine + " runs nvfp4 weights on NVIDIA from sm80 (Ampere) only";
    case WeightFormat::awq_int4:
      // AWQ's kernels need sm75 (quantization/awq.py get_min_capability 75; AWQ Marlin from sm80); ROCm runs AWQ
      // through its Triton kernels.
      if (!nvidia || g.sm75) return std::nullopt;
      return engine + " runs AWQ from sm75 (Turing) on NVIDIA: " + d.id + " is older";
    default:
      return std::nullopt;  // bf16/fp16 (cast to fp16 before sm80), GPTQ (sm60), the rest as the estimate models
  }
}

}  // namespace gpuplan
