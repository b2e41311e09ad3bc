// SGLang's start-up memory arithmetic (sgl-project/sglang python/sglang/srt/server_args.py
// _handle_gpu_memory_settings, the heuristic of PR #10975, v0.5.4 on; model_runner.py profile_max_num_token):
//   mem_fraction_static = (gpu_mem − reserved) / gpu_mem, reserved (MB) for prefill activations and CUDA graphs
//   token pool          = (mem_fraction_static × free memory at start − weights) / bytes per token of all layers
// The rest of the GPU, (1 − mem_fraction_static) of it, is left to activations and CUDA graphs.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "../units.h"

namespace gpuplan {

struct SglangProfile {
  static constexpr const char* version = "0.5";
};

struct SglangDefaults {
  std::int64_t chunked_prefill_size = 0;
  std::int64_t cuda_graph_max_bs = 0;
  double mem_fraction_static = 0;
};

// gpu_mem: the device total as nvidia-smi reports it, in MiB (sglang get_device_memory_capacity).
inline SglangDefaults sglang_defaults(double gpu_mem_mib, std::int64_t tp) {
  SglangDefaults d;
  const bool small_tp = tp < 4;
  if (gpu_mem_mib < 35 * 1024) d = {2048, small_tp ? 24 : 80, 0};        // A10, 4090, 5090
  else if (gpu_mem_mib < 60 * 1024) d = {4096, small_tp ? 32 : 160, 0};  // A100 40GB, L40
  else if (gpu_mem_mib < 160 * 1024) d = {8192, small_tp ? 256 : 512, 0};  // H100, A100 80GB, H20, H200
  else d = {16384, 512, 0};                                                 // B200, MI300
  // Reserved MB: attention-backend metadata, 1.5 MB per prefill-chunk token, 2 MB per CUDA-graph batch size,
  // 128 MB per tensor-parallel rank; at least 10 GB on GPUs over 60 GB.
  double reserved = 512 + 1.5 * double(std::max<std::int64_t>(d.chunked_prefill_size, 2048)) +
                    2.0 * double(d.cuda_graph_max_bs) + double(tp) / 8.0 * 1024.0;
  if (gpu_mem_mib > 60 * 1024) reserved = std::max(reserved, 10.0 * 1024);
  d.mem_fraction_static = std::round((gpu_mem_mib - reserved) / gpu_mem_mib * 1000.0) / 1000.0;
  return d;
}

}  // namespace gpuplan
