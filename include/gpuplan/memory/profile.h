// Framework profiles: what a runtime allocates beyond the tensors a formula names.
#pragma once
#include <array>
#include <string_view>

#include "../enum_table.h"
#include "../units.h"

namespace gpuplan {

enum class Profile { pytorch, none };

inline constexpr std::array<Spelling<Profile>, 2> profile_names{{{Profile::pytorch, "pytorch"}, {Profile::none, "none"}}};

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
  // calibration cases without recomputation, 4%.
  static constexpr double fragmentation = 0.04;
  // Caching allocator: blocks above 1 MiB are rounded up to 2 MiB (c10/cuda/CUDACachingAllocator.cpp kRoundLarge).
  static constexpr double large_block_round = 2.0 * 1048576.0;
};

}  // namespace gpuplan
