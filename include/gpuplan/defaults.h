// The workload every command assumes when a flag is not given — train, infer, sweep and plan (and the web page's
// first values) read these, so one question gets one answer whichever command asks it.
#pragma once
#include <cstdint>

namespace gpuplan::defaults {

inline constexpr std::int64_t batch = 1;          // sequences per GPU (training micro-batch; serving concurrency)
// Training sequence length: Llama 2's pre-training context, and the length fine-tuning recipes commonly pack to.
inline constexpr std::int64_t seq = 2048;
// A serving request: a 1K-token prompt answered with 256 tokens, a chat turn with some context.
inline constexpr std::int64_t prompt_len = 1024;
inline constexpr std::int64_t new_tokens = 256;

}  // namespace gpuplan::defaults
