// Where a model comes from: a preset, a config.json, a Hugging Face folder, a GGUF file, the local Hugging Face
// cache or the Hub. Reads files (bounded) and hands their bytes to the library's parsers.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <gpuplan/checkpoint.h>
#include <gpuplan/model.h>
#include <nlohmann/json.hpp>

namespace gpuplan::cli {

struct ModelOptions;

struct ModelSource {
  ModelSpec spec;
  std::string kind;       // params, preset, config, folder, gguf, hf-cache, hub
  std::string ref;        // what the user named
  std::string path;       // the file or folder read
  std::string revision;   // Hub revision (and the commit it resolved to, in the cache)
  std::optional<Checkpoint> checkpoint;
  std::optional<StoredWeights> stored;
  std::string shipped_weights;     // a preset's released format where it is not 16-bit (ModelPreset::shipped_weights)
  std::optional<ModuleFormats> module_formats;  // a config's per-module formats (ModelOpt MIXED_PRECISION)
  std::int64_t vision_params = 0;  // a config's vision encoder (Qwen3-VL style), 0 when it has none gpuplan reads
  VisionEncoderShape vision;       // its shape (depth 0: none)
  std::vector<std::string> notes;  // what the headers say that the architecture model does not

  // The serving estimator's weights: the checkpoint's own bytes when it was read.
  std::optional<StoredWeightBytes> stored_language() const;
  nlohmann::json json() const;  // report["model"]["source"]
};

ModelSource resolve_model_source(const ModelOptions& o);

// Hugging Face cache root: HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub.
std::string hf_cache_root();

}  // namespace gpuplan::cli
