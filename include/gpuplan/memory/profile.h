// Framework profiles: what a runtime allocates beyond the tensors a formula names.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "../enum_table.h"
#include "../units.h"

namespace gpuplan {

// pytorch: eager PyTorch + HF transformers (training, and generate for serving), ZeRO stages as FSDP2; deepspeed:
// the same model code trained by DeepSpeed's ZeRO optimizers; vllm, sglang, llama.cpp and ollama (llama.cpp with
// Ollama's defaults): serving engines; none: tensor bytes only.
enum class Profile { pytorch, none, vllm, llama_cpp, deepspeed, sglang, ollama };

inline constexpr std::array<Spelling<Profile>, 7> profile_names{{{Profile::pytorch, "pytorch"},
                                                                 {Profile::none, "none"},
                                                                 {Profile::vllm, "vllm"},
                                                                 {Profile::llama_cpp, "llama.cpp"},
                                                                 {Profile::deepspeed, "deepspeed"},
                                                                 {Profile::sglang, "sglang"},
                                                                 {Profile::ollama, "ollama"}}};

// Profiles that load GGUF files into llama.cpp's buffers.
inline bool llama_cpp_engine(Profile p) { return p == Profile::llama_cpp || p == Profile::ollama; }

// Profiles whose tensors live in PyTorch's caching allocator beside a CUDA context and cuBLAS workspaces.
inline bool torch_runtime(Profile p) { return p == Profile::pytorch || p == Profile::deepspeed; }

// DeepSpeed 0.16's ZeRO knobs that change memory (deepspeed/runtime/zero/config.py defaults). HF Trainer's "auto"
// sets reduce_bucket_size to hidden² and the prefetch bucket to 0.9·hidden² instead.
struct DeepSpeedConfig {
  double reduce_bucket_size = 5e8;    // elements of each gradient bucket (ZeRO-1/2 IPG buffer, ZeRO-3 reduce buffer)
  double prefetch_bucket_size = 5e7;  // ZeRO-3: parameter elements fetched ahead of use
  std::optional<bool> overlap_comm;   // default: true at stage 3, false below (two IPG buffers when true)
  bool overlaps(int stage) const { return overlap_comm.value_or(stage == 3); }
};

// Constants of the `pytorch` profile: PyTorch 2.11 + CUDA 13 on Hopper, as measured on an NVIDIA H200
// (tests/data/calibration, field context_bytes; shared reference formulas.md §A8).
struct PytorchProfile {
  // CUDA context + lazily loaded kernels (cuBLAS, SDPA) outside the caching allocator, per process:
  // measured 648,871,936 B on every single-GPU calibration case.
  static constexpr Bytes cuda_context{648'871'936.0};
  // NCCL communicator buffers after the first collective: 2-GPU runs measured 1,530,xxx,xxx B of context,
  // i.e. +881 MB over a single-GPU process (NCCL_BUFFSIZE 4 MiB × channels × peers; nccl issues #285, #1685).
  static constexpr Bytes nccl_buffers{881'000'000.0};
  // cuBLAS + cuBLASLt workspaces, allocated through the caching allocator: 32 MiB each on Hopper
  // (pytorch PR #120925); a constant 67.1 MB of allocated memory in every measured step.
  static constexpr Bytes cublas_workspaces{2.0 * 32.0 * 1048576.0};
  // Caching allocator reserve beyond live tensors, as a share of the tensors allocated and freed within a step
  // (rounding to 512 B / 2 MiB, split blocks that cannot be reused): median of reserved − allocated over the
  // calibration cases without recomputation, 4%. Training replaces it by the allocator replay; serving keeps it
  // as the floor under its replay (generate makes many small tensors the replay does not see).
  static constexpr double fragmentation = 0.04;
};

// How a GPU reaches its tensor-parallel peers, which sets the buffers NCCL and the engines' custom all-reduce keep:
// NVSwitch of Hopper or later (NCCL's NVLink SHARP buffers), other NVLink (A100 SXM, bridges), or PCIe only.
enum class GpuLink { pcie, nvlink, nvswitch };

// From a catalog entry's interconnect kind: "NVLink 4 (18 links)" / "NVLink 5 …" (not a bridge) is NVSwitch-class.
inline GpuLink gpu_link_of(std::string_view interconnect) {
  if (interconnect.rfind("NVLink", 0) != 0) return GpuLink::pcie;
  if (interconnect.find("bridge") != std::string_view::npos) return GpuLink::nvlink;
  return interconnect.rfind("NVLink 4", 0) == 0 || interconnect.rfind("NVLink 5", 0) == 0 ? GpuLink::nvswitch
                                                                                          : GpuLink::nvlink;
}

// Serving engines pick their scheduler defaults by the GPU's memory (vLLM's max_num_batched_tokens, SGLang's
// mem_fraction_static); without --gpu they are taken for an H100 SXM, the GPU their defaults are tuned on: its
// driver total, 85,520,809,984 B = 81,559 MiB (nvidia-smi; catalog h100-sxm usable_memory_bytes).
inline constexpr Bytes engine_default_device_memory{85'520'809'984.0};

}  // namespace gpuplan
