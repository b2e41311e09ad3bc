// The workload every command assumes when a flag is not given — train, infer, sweep and plan (and the web page's
// first values) read these, so one question gets one answer whichever command asks it.
#pragma once
#include <cstdint>

namespace gpuplan::defaults {

// Sequences per GPU: serving concurrency; the training micro-batch where there is no device to fill (with --gpu,
// train takes the largest that fits, as plan train chooses it: plan.h choose_micro_batch) and in sweeps.
inline constexpr std::int64_t batch = 1;
// Training sequence length: Llama 2's pre-training context, and the length fine-tuning recipes commonly pack to.
inline constexpr std::int64_t seq = 2048;
// A serving request: a 1K-token prompt answered with 256 tokens, a chat turn with some context.
inline constexpr std::int64_t prompt_len = 1024;
inline constexpr std::int64_t new_tokens = 256;

}  // namespace gpuplan::defaults
