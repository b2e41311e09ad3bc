// The Hugging Face Hub over HTTPS (through the curl program): a model's config.json, its safetensors index and each
// safetensors file's header, fetched by HTTP Range requests and mirrored into gpuplan's cache as sparse files, so the folder
// reader sees a Hugging Face folder and a second run needs no network. Weights are never downloaded.
#pragma once
#include <cstddef>
#include <string>

namespace gpuplan::cli {

// The most a config.json or a safetensors index may hold, from disk or the Hub: real ones are < 1 MB.
inline constexpr std::size_t max_json_bytes = 64u << 20;
// The most safetensors files one model may have, in a folder or on the Hub: the largest published checkpoints have
// a few hundred (Llama 3.1 405B: 191, DeepSeek-V3: 163).
inline constexpr std::size_t max_shards = 4096;

struct HubSettings {
  std::string endpoint;  // HF_ENDPOINT without a trailing '/', else https://huggingface.co (credentials refused)
  std::string token;     // --hf-token, else HF_TOKEN: sent as a bearer token, never printed or cached
  bool offline = false;  // HF_HUB_OFFLINE=1: the cache only
  std::string cache;     // $XDG_CACHE_HOME/gpuplan/hub, else ~/.cache/gpuplan/hub
  double timeout_s = 300;       // --hub-timeout, else GPUPLAN_HUB_TIMEOUT: every request of the command ends by then
  double request_timeout_s = 120;  // GPUPLAN_HUB_REQUEST_TIMEOUT: one request (a header of a few MB at most) ends by then
  double max_age_s = 86'400;    // GPUPLAN_HUB_MAX_AGE: a cached branch (not a commit) older than this is fetched again
  bool refresh = false;         // --refresh: fetch a cached branch again now

  static HubSettings from_environment(const std::string& token_flag);
};

// repo "org/name" at `revision` (both checked names: model_source.cpp) → a folder in the cache holding
// config.json, the index (when the model has one) and every safetensors file as its header followed by a hole of
// the file's real size. Throws DataError (exit 3) with one line for 401/403, 404, an unreachable endpoint, a
// timeout, an oversized or malformed answer.
std::string hub_snapshot(const std::string& repo, const std::string& revision, const HubSettings& hub);

}  // namespace gpuplan::cli
