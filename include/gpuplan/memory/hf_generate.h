// HF transformers' generate as the `pytorch` profile serves it: the settings a user passes to from_pretrained and
// generate that change memory. Its arithmetic (the prefill working set, the KV cache grown by torch.cat, the caching
// allocator's replay) lives in memory/inference.h, measured with transformers 5 and PyTorch 2.11 on an H200
// (tests/data/calibration; profile.h PytorchProfile).
#pragma once
#include <cstdint>

#include "workload.h"

namespace gpuplan {

struct HfGenerateSettings {
  Attention attention = Attention::sdpa;  // attn_implementation
  std::int64_t prefill_chunk = 0;         // prompt tokens per prefill forward (0: the whole prompt at once)
};

}  // namespace gpuplan
