// Checkpoint headers: safetensors and GGUF parsing against hand-built bytes, tensor placement, packed parameter
// counts, the GGUF architecture, and the serving estimator using stored bytes.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <gpuplan/checkpoint.h>
#include <gpuplan/memory/inference.h>
#include <gpuplan/model_gguf.h>
#include <gpuplan/builtin.h>
#include <gpuplan/builtin_data.h>
#include <gpuplan/text.h>

using namespace gpuplan;

namespace {

std::string le64(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[std::size_t(i)] = char((v >> (8 * i)) & 0xff);
  return s;
}

std::string safetensors_file(const std::string& header_json, std::size_t data) {
  return le64(header_json.size()) + header_json + std::string(data, '\0');
}

// A minimal GGUF writer for the tests (the format as ggml/docs/gguf.md gives it).
struct GgufWriter {
  std::string b = "GGUF";
  std::string kvs, infos;
  int n_kv = 0, n_t = 0;
  template <class T>
  static std::string raw(T v) {
    std::string s(sizeof(T), '\0');
    std::memcpy(s.data(), &v, sizeof(T));
    return s;
  }
  static std::string str(const std::string& s) { return raw<std::uint64_t>(s.size()) + s; }
  GgufWriter& u32(const std::string& k, std::uint32_t v) {
    kvs += str(k) + raw<std::uint32_t>(4) + raw(v), ++n_kv;
    return *this;
  }
  GgufWriter& text(const std::string& k, const std::string& v) {
    kvs += str(k) + raw<std::uint32_t>(8) + str(v), ++n_kv;
    return *this;
  }
  GgufWriter& i32_array(const std::string& k, std::initializer_list<std::int32_t> v) {
    kvs += str(k) + raw<std::uint32_t>(9) + raw<std::uint32_t>(5) + raw<std::uint64_t>(v.size());
    for (auto x : v) kvs += raw(x);
    ++n_kv;
    return *this;
  }
  GgufWriter& f32(const std::string& k, float v) {
    kvs += str(k) + raw<std::uint32_t>(6) + raw(v), ++n_kv;
    return *this;
  }
  // An array of u32 (type 4) or bool (type 7) entries, as gguf-py writes per-layer lists.
  GgufWriter& array(const std::string& k, const std::vector<std::int64_t>& v, std::uint32_t type = 4) {
    kvs += str(k) + raw<std::uint32_t>(9) + raw(type) + raw<std::uint64_t>(v.size());
    for (auto x : v) kvs += type == 7 ? raw(std::uint8_t(x != 0)) : raw(std::uint32_t(x));
    ++n_kv;
    return *this;
  }
  GgufWriter& tensor(const std::string& name, std::initializer_list<std::uint64_t> shape, std::uint32_t type) {
    infos += str(name) + raw<std::uint32_t>(std::uint32_t(shape.size()));
    for (auto d : shape) infos += raw(d);
    infos += raw(type) + raw<std::uint64_t>(0), ++n_t;
    return *this;
  }
  std::string bytes(std::uint32_t version = 3) const {
    return b + raw(version) + raw<std::uint64_t>(std::uint64_t(n_t)) + raw<std::uint64_t>(std::uint64_t(n_kv)) + kvs +
           infos;
  }
};

GgufWriter small_llama() {
  GgufWriter w;
  w.text("general.architecture", "llama")
      .u32("llama.block_count", 2)
      .u32("llama.embedding_length", 256)
      .u32("llama.feed_forward_length", 512)
      .u32("llama.attention.head_count", 4)
      .i32_array("llama.attention.head_count_kv", {2, 1})  // per layer: llama.cpp takes each; the largest sizes it
      .u32("llama.vocab_size", 1000)
      .tensor("token_embd.weight", {256, 1000}, 12)        // Q4_K: 144 bytes per 256
      .tensor("blk.0.attn_q.weight", {256, 256}, 14)       // Q6_K: 210 bytes per 256
      .tensor("blk.1.attn_norm.weight", {256}, 0)          // F32
      .tensor("output.weight", {256, 1000}, 8);            // Q8_0: 34 bytes per 32
  return w;
}

}  // namespace

TEST_CASE("safetensors: tensors, byte ranges and dtype sizes from the header", "[checkpoint]") {
  const std::string h = R"({"__metadata__":{"format":"pt"},)"
                        R"("a":{"dtype":"BF16","shape":[3,4],"data_offsets":[0,24]},)"
                        R"("b":{"dtype":"F4","shape":[3],"data_offsets":[24,26]},)"
                        R"("c":{"dtype":"F8_E4M3","shape":[],"data_offsets":[26,27]}})";
  const auto parsed = safetensors::parse_file_prefix(safetensors_file(h, 27), "t", 8 + h.size() + 27);
  REQUIRE(parsed.tensors.size() == 3);
  CHECK(parsed.metadata.at("format") == "pt");
  CHECK(parsed.tensors[0].elements() == 12);
  CHECK(parsed.tensors[1].bytes == 2);  // three 4-bit values round up to two bytes
  CHECK(parsed.tensors[2].elements() == 1);  // a scalar
  CHECK(parsed.data_bytes == 27);
}

TEST_CASE("safetensors: hostile headers are DataErrors before anything large is allocated", "[checkpoint]") {
  CHECK(safetensors::header_length(le64(100'000'000), "t") == 100'000'000);
  CHECK_THROWS_WITH(safetensors::header_length(le64(100'000'001), "t"), Catch::Contains("100 MB"));
  CHECK_THROWS_WITH(safetensors::header_length("abc", "t"), Catch::Contains("shorter than 8 bytes"));
  auto bad = [](const std::string& h) { return safetensors::parse_file_prefix(safetensors_file(h, 64), "t", 0); };
  CHECK_THROWS_WITH(bad(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,8]}})"), Catch::Contains("shape"));
  CHECK_THROWS_WITH(bad(R"({"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,8]}})"), Catch::Contains("sizes"));
  CHECK_THROWS_WITH(bad(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})"), Catch::Contains("order"));
  CHECK_THROWS_WITH(bad(R"({"a":{"dtype":"F32"}})"), Catch::Contains("data_offsets"));
  CHECK_THROWS_WITH(bad(R"([1,2])"), Catch::Contains("JSON object"));
  CHECK_THROWS_WITH(
      bad(R"({"a":{"dtype":"U8","shape":[1099511627776,1099511627776],"data_offsets":[0,1]}})"),
      Catch::Contains("2^50"));
  const std::string h = R"({"a":{"dtype":"U8","shape":[64],"data_offsets":[0,64]}})";
  CHECK_THROWS_WITH(safetensors::parse_file_prefix(safetensors_file(h, 10), "t", 8 + h.size() + 10),
                    Catch::Contains("past the end"));
}

TEST_CASE("safetensors: tensors over the same bytes are refused", "[checkpoint]") {
  const std::string h = R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"U8","shape":[8],"data_offsets":[4,12]}})";
  CHECK_THROWS_WITH(safetensors::parse_file_prefix(safetensors_file(h, 12), "t", 0), Catch::Contains("overlap"));
  const std::string ok = R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]},)"
                         R"("e":{"dtype":"U8","shape":[0],"data_offsets":[8,8]},)"
                         R"("b":{"dtype":"U8","shape":[4],"data_offsets":[8,12]}})";
  CHECK(safetensors::parse_file_prefix(safetensors_file(ok, 12), "t", 0).tensors.size() == 3);
}

TEST_CASE("checkpoint: sums over tensors stay exact or are refused", "[checkpoint]") {
  safetensors::Header big;
  big.tensors.assign(2, safetensors::Tensor{"t", "U8", {std::int64_t(1) << 40, 1 << 13}, std::int64_t(1) << 53});
  CHECK_THROWS_WITH(checkpoint_from({big}, "", 4, "dir"), Catch::Contains("dir: the tensors hold over 2^53"));
  big.tensors.resize(1);
  CHECK(checkpoint_from({big}, "", 4, "dir").tensors.size() == 1);
}

TEST_CASE("text from files: control characters escaped, invalid UTF-8 replaced", "[checkpoint]") {
  CHECK(printable("a\x1b[2Jb\x07") == "a\\x1b[2Jb\\x07");
  CHECK(printable("line\nbreak") == "line\\x0abreak");
  CHECK(printable("caf\xc3\xa9 \xe2\x80\xa6") == "caf\xc3\xa9 \xe2\x80\xa6");  // é and … pass
  CHECK(printable("\xc2\x9b") == "\\x9b");                                    // C1 CSI
  CHECK(printable("\xff\xfe.json") == "\xef\xbf\xbd\xef\xbf\xbd.json");         // two U+FFFD
  CHECK(printable("\xc0\xaf") == "\xef\xbf\xbd\xef\xbf\xbd");                   // overlong '/'
  CHECK(printable("\xed\xa0\x80") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");       // a surrogate
  CHECK(printable(std::string(10, 'x'), 4) == "xxxx…");
}

TEST_CASE("gguf: metadata, per-layer arrays and tensor bytes by ggml block", "[checkpoint]") {
  const auto h = gguf_file::parse_header(small_llama().bytes(), "t");
  CHECK(h.version == 3);
  CHECK(h.string("general.architecture") == "llama");
  CHECK(h.integer("llama.block_count") == 2);
  REQUIRE(h.tensors.size() == 4);
  CHECK(h.tensors[0].bytes == 1000 * 144);
  CHECK(h.tensors[1].bytes == 256 * 210);
  CHECK(h.tensors[2].bytes == 256 * 4);
  CHECK(h.tensors[3].bytes == 256 * 1000 / 32 * 34);
  CHECK(gguf_file::ggml_type(39).bytes == 17);  // MXFP4: E8M0 scale + 16 bytes of E2M1
  CHECK(gguf_file::ggml_type(4).name == nullptr);  // removed Q4_2
}

TEST_CASE("gguf: truncated, wrong and absurd headers", "[checkpoint]") {
  const std::string full = small_llama().bytes();
  CHECK_THROWS_AS(gguf_file::parse_header(full.substr(0, full.size() - 5), "t"), gguf_file::Truncated);
  CHECK_THROWS_AS(gguf_file::parse_header(full.substr(0, 3), "t"), gguf_file::Truncated);
  CHECK_THROWS_WITH(gguf_file::parse_header("GGUX" + full.substr(4), "t"), Catch::Contains("bad magic"));
  CHECK_THROWS_WITH(gguf_file::parse_header(small_llama().bytes(1), "t"), Catch::Contains("version 1"));
  GgufWriter w;
  w.tensor("x", {100}, 12);  // 100 is not a whole Q4_K block
  CHECK_THROWS_WITH(gguf_file::parse_header(w.bytes(), "t"), Catch::Contains("whole Q4_K blocks"));
  GgufWriter removed;
  removed.tensor("x", {32}, 31);
  CHECK_THROWS_WITH(gguf_file::parse_header(removed.bytes(), "t"), Catch::Contains("unknown ggml type 31"));
  std::string absurd = full.substr(0, 16) + GgufWriter::raw<std::uint64_t>(std::uint64_t(1) << 40);
  CHECK_THROWS_WITH(gguf_file::parse_header(absurd, "t"), Catch::Contains("absurd"));
}

TEST_CASE("gguf: alignment a power of two, tensor data aligned, inside the file, not overlapping", "[checkpoint]") {
  CHECK_THROWS_WITH(gguf_file::parse_header(small_llama().u32("general.alignment", 3).bytes(), "t"),
                    Catch::Contains("power of two"));
  CHECK_THROWS_WITH(gguf_file::parse_header(small_llama().u32("general.alignment", 0).bytes(), "t"),
                    Catch::Contains("power of two"));
  CHECK_THROWS_WITH(gguf_file::parse_header(small_llama().text("general.alignment", "32").bytes(), "t"),
                    Catch::Contains("power of two"));
  auto h = gguf_file::parse_header(small_llama().u32("general.alignment", 64).bytes(), "t");
  CHECK(h.alignment == 64);
  // The writer puts every tensor at offset 0: they overlap.
  CHECK_THROWS_WITH(gguf_file::check_data(h, 1 << 20, "t"), Catch::Contains("overlap"));
  std::uint64_t at = 0;
  for (auto& t : h.tensors) t.offset = at, at += (std::uint64_t(t.bytes) + 63) / 64 * 64;
  const std::uint64_t data_start = (std::uint64_t(h.header_bytes) + 63) / 64 * 64;
  gguf_file::check_data(h, data_start + at, "t");
  CHECK_THROWS_WITH(gguf_file::check_data(h, data_start + at - 64, "t"), Catch::Contains("past the end"));
  h.tensors[1].offset += 32;
  CHECK_THROWS_WITH(gguf_file::check_data(h, 1 << 30, "t"), Catch::Contains("multiple of general.alignment"));
}

TEST_CASE("model_from_gguf: absurd counts are DataErrors before per-layer work", "[checkpoint]") {
  auto spec = [](GgufWriter w) { return model_from_gguf(gguf_file::parse_header(w.bytes(), "t"), "t"); };
  CHECK_THROWS_WITH(spec(small_llama().u32("llama.block_count", 4'000'000'000u).u32("llama.attention.sliding_window", 4096)),
                    Catch::Contains("num_hidden_layers 4000000000"));
  CHECK_THROWS_WITH(spec(small_llama().u32("llama.expert_count", 1u << 31).u32("llama.expert_used_count", 2)),
                    Catch::Contains("num_experts"));
  CHECK_THROWS_AS(spec(small_llama().u32("llama.attention.key_length", 1u << 31)), DataError);
}

TEST_CASE("model_from_gguf: the shape llama.cpp reads, untied when output.weight exists", "[checkpoint]") {
  const ModelSpec s = model_from_gguf(gguf_file::parse_header(small_llama().bytes(), "t"), "t");
  CHECK(s.layers == 2);
  CHECK(s.hidden == 256);
  CHECK(s.kv_heads == 2);
  CHECK(s.head_dim == 64);
  CHECK(s.vocab == 1000);
  CHECK_FALSE(s.tied_embeddings);
  GgufWriter none;
  none.u32("llama.block_count", 2);
  CHECK_THROWS_WITH(model_from_gguf(gguf_file::parse_header(none.bytes(), "t"), "t"),
                    Catch::Contains("general.architecture"));
}

namespace {

// A Gemma 4 GGUF as convert_hf_to_gguf.py (Gemma4Model.set_gguf_parameters) writes it from an HF config, here the
// preset's: per-layer lists where the layers differ, key_length the global head_dim, key_length_swa the sliding one;
// tensors named as llama.cpp loads them (an attn_k only on layers with their own KV, no attn_v where the values are
// the keys). The sliding layers are the HF loader's (layer_types, as transformers fills them in).
GgufWriter gemma4_gguf(const ModelSpec& hf, const nlohmann::json& c) {
  const auto n = static_cast<std::size_t>(hf.layers);
  const std::int64_t shared = c.value("num_kv_shared_layers", 0);
  std::vector<std::int64_t> swa(n), kv(n), ffn(n);
  for (std::size_t l = 0; l < n; ++l) {
    swa[l] = hf.is_sliding_layer(std::int64_t(l));
    const bool global_kv = !swa[l] && c["num_global_key_value_heads"].is_number();
    kv[l] = global_kv ? c["num_global_key_value_heads"].get<std::int64_t>() : c["num_key_value_heads"].get<std::int64_t>();
    const bool wide = c.value("use_double_wide_mlp", false) && std::int64_t(l) >= hf.layers - shared;
    ffn[l] = c["intermediate_size"].get<std::int64_t>() * (wide ? 2 : 1);
  }
  GgufWriter w;
  w.text("general.architecture", "gemma4")
      .u32("gemma4.block_count", std::uint32_t(hf.layers))
      .u32("gemma4.context_length", std::uint32_t(hf.max_positions))
      .u32("gemma4.embedding_length", std::uint32_t(hf.hidden))
      .array("gemma4.feed_forward_length", ffn)
      .u32("gemma4.attention.head_count", std::uint32_t(hf.heads))
      .array("gemma4.attention.head_count_kv", kv)
      .u32("gemma4.attention.key_length", c["global_head_dim"].get<std::uint32_t>())
      .u32("gemma4.attention.value_length", c["global_head_dim"].get<std::uint32_t>())
      .u32("gemma4.attention.key_length_swa", c["head_dim"].get<std::uint32_t>())
      .u32("gemma4.attention.value_length_swa", c["head_dim"].get<std::uint32_t>())
      .u32("gemma4.attention.sliding_window", c["sliding_window"].get<std::uint32_t>())
      .array("gemma4.attention.sliding_window_pattern", swa, 7)
      .u32("gemma4.attention.shared_kv_layers", std::uint32_t(shared))
      .u32("gemma4.embedding_length_per_layer_input", std::uint32_t(c.value("hidden_size_per_layer_input", 0)))
      .f32("gemma4.final_logit_softcapping", c["final_logit_softcapping"].get<float>())
      .tensor("token_embd.weight", {std::uint64_t(hf.hidden), std::uint64_t(hf.vocab)}, 1);
  if (c.value("enable_moe_block", false))
    w.u32("gemma4.expert_count", std::uint32_t(hf.moe.experts))
        .u32("gemma4.expert_used_count", std::uint32_t(hf.moe.experts_per_token))
        .u32("gemma4.expert_feed_forward_length", c["moe_intermediate_size"].get<std::uint32_t>());
  if (hf.per_layer_input > 0)
    w.tensor("per_layer_token_embd.weight",
             {std::uint64_t(hf.layers * hf.per_layer_input), std::uint64_t(c["vocab_size_per_layer_input"].get<std::int64_t>())}, 1);
  for (std::size_t l = 0; l < n; ++l) {
    const std::string blk = "blk." + std::to_string(l) + ".";
    w.tensor(blk + "attn_q_norm.weight", {1}, 0);
    if (std::int64_t(l) >= hf.layers - shared) continue;
    w.tensor(blk + "attn_k.weight", {1}, 0);
    if (swa[l] || !c.value("attention_k_eq_v", false)) w.tensor(blk + "attn_v.weight", {1}, 0);
  }
  return w;
}

nlohmann::json preset_config(const std::string& id) {
  for (const auto& f : detail::builtin_files) {
    if (f.path != "data/models/gemma.json") continue;
    const nlohmann::json file = nlohmann::json::parse(f.bytes.begin(), f.bytes.end());
    for (const auto& m : file["models"])
      if (m["id"] == id) return m["config"];
  }
  FAIL("no preset " << id);
  return {};
}

}  // namespace

TEST_CASE("model_from_gguf: a Gemma 4 GGUF gives the shape its HF config gives", "[checkpoint]") {
  for (const char* id : {"gemma-4-e2b", "gemma-4-e4b", "gemma-4-26b-a4b", "gemma-4-31b"}) {
    INFO(id);
    const ModelSpec& hf = find_preset(id).spec;
    const ModelSpec g = model_from_gguf(gguf_file::parse_header(gemma4_gguf(hf, preset_config(id)).bytes(), "t"), "t");
    CHECK(g.layers == hf.layers);
    CHECK(g.kv_heads == hf.kv_heads);
    CHECK(g.head_dim == hf.head_dim);
    CHECK(g.intermediate == hf.intermediate);
    CHECK(g.sliding_window == hf.sliding_window);
    CHECK(g.sliding_layers == hf.sliding_layers);
    CHECK(g.layer_shapes == hf.layer_shapes);
    CHECK(g.shape_of == hf.shape_of);
    CHECK(g.moe == hf.moe);
    CHECK(g.moe_layers == hf.moe_layers);
    CHECK(g.per_layer_input == hf.per_layer_input);
    CHECK(g.per_layer_vocab == hf.per_layer_vocab);
    CHECK(g.router_scales == hf.router_scales);
    CHECK(g.norms_per_layer == hf.norms_per_layer);
    CHECK(g.qk_norm == hf.qk_norm);
    CHECK(g.tied_embeddings == hf.tied_embeddings);
    CHECK(g.activation == hf.activation);
    CHECK(g.final_logit_softcap == hf.final_logit_softcap);
    CHECK(count_params(g).total == count_params(hf).total);
    CHECK(count_params(g).active == count_params(hf).active);
    CHECK(kv_layer_count(g) == kv_layer_count(hf));
  }
}

TEST_CASE("model_from_gguf: malformed Gemma 4 keys are DataErrors", "[checkpoint]") {
  const ModelSpec& hf = find_preset("gemma-4-e2b").spec;
  const nlohmann::json c = preset_config("gemma-4-e2b");
  auto spec = [](const GgufWriter& w) { return model_from_gguf(gguf_file::parse_header(w.bytes(), "t"), "t"); };
  // The per-layer lists must name every layer (the last key written wins in the parsed map).
  CHECK_THROWS_WITH(spec(gemma4_gguf(hf, c).array("gemma4.attention.sliding_window_pattern", {1, 0}, 7)),
                    Catch::Contains("sliding_window_pattern\" must list a number ≥ 0 for each of the 35 layers"));
  CHECK_THROWS_WITH(spec(gemma4_gguf(hf, c).array("gemma4.feed_forward_length", std::vector<std::int64_t>(34, 6144))),
                    Catch::Contains("feed_forward_length"));
  GgufWriter strings = gemma4_gguf(hf, c);
  strings.kvs += GgufWriter::str("gemma4.attention.head_count_kv") + GgufWriter::raw<std::uint32_t>(9) +
                 GgufWriter::raw<std::uint32_t>(8) + GgufWriter::raw<std::uint64_t>(0);
  ++strings.n_kv;
  CHECK_THROWS_WITH(spec(strings), Catch::Contains("head_count_kv"));
  std::vector<std::int64_t> no_heads_on_4(35, 1);
  no_heads_on_4[4] = 0;  // a full-attention layer
  CHECK_THROWS_WITH(spec(gemma4_gguf(hf, c).array("gemma4.attention.head_count_kv", no_heads_on_4)),
                    Catch::Contains("a layer's heads or widths are outside 1"));
  CHECK_THROWS_WITH(spec(gemma4_gguf(hf, c).array("gemma4.attention.head_count_kv", std::vector<std::int64_t>(35, 0))),
                    Catch::Contains("num_key_value_heads must be positive"));
  CHECK_THROWS_WITH(spec(gemma4_gguf(hf, c).u32("gemma4.attention.shared_kv_layers", 36)),
                    Catch::Contains("shared_kv_layers exceeds block_count"));
  CHECK_THROWS_WITH(spec(gemma4_gguf(hf, c).u32("gemma4.attention.value_length", 256)),
                    Catch::Contains("value_length must equal key_length"));
  CHECK_THROWS_WITH(spec(gemma4_gguf(hf, c).f32("gemma4.final_logit_softcapping", -1.0f)),
                    Catch::Contains("final_logit_softcapping"));
  CHECK_THROWS_WITH(spec(gemma4_gguf(hf, c).f32("gemma4.final_logit_softcapping", std::nanf(""))),
                    Catch::Contains("final_logit_softcapping"));
  GgufWriter no_swa_dim;
  no_swa_dim.text("general.architecture", "gemma4")
      .u32("gemma4.block_count", 2)
      .u32("gemma4.embedding_length", 64)
      .u32("gemma4.feed_forward_length", 128)
      .u32("gemma4.attention.head_count", 2)
      .u32("gemma4.vocab_size", 100);
  CHECK_THROWS_WITH(spec(no_swa_dim), Catch::Contains("key_length_swa"));
  // Every failure above is a DataError: the CLI's exit 3.
  CHECK_THROWS_AS(spec(gemma4_gguf(hf, c).u32("gemma4.attention.shared_kv_layers", 36)), DataError);
}

TEST_CASE("checkpoint: tensors placed by name, packed formats counted as weights", "[checkpoint]") {
  Checkpoint c;
  c.format = "safetensors";
  c.quantization = "gptq";
  c.tensors = {
      {"model.embed_tokens.weight", "F16", 1000, 2000},
      {"model.layers.0.self_attn.q_proj.qweight", "I32", 512 * 4096 / 8, 512 * 4096 / 2},  // 8 weights per int32
      {"model.layers.0.self_attn.q_proj.scales", "F16", 4 * 4096, 2 * 4 * 4096},             // bytes, no weights
      {"model.language_model.layers.1.mlp.experts.gate_up_proj_blocks", "U8", 100, 100},    // MXFP4: 2 per byte
      {"model.layers.2.mlp.down_proj.weight", "BF16", 10, 20},                              // past the layers: MTP
      {"model.vision_tower.transformer.layers.0.attention.q_proj.weight", "BF16", 10, 20},
      {"transformer.h.1.attn.c_attn.weight", "F32", 5, 20},
      {"lm_head.weight", "F16", 1000, 2000},
  };
  const StoredWeights w = stored_weights(c, 2);
  CHECK(w.language.embedding.in(unit::bytes) == 2000);
  CHECK(w.language.output.in(unit::bytes) == 2000);
  CHECK(w.language.per_layer[0].in(unit::bytes) == 512 * 4096 / 2 + 8 * 4096);
  CHECK(w.language.per_layer[1].in(unit::bytes) == 100 + 20);
  CHECK(w.language_params.in(unit::params) == 1000 + 512 * 4096 + 200 + 5 + 1000);
  CHECK(w.other.in(unit::bytes) == 40);
  CHECK(w.other_parts.count("vision_tower") == 1);
  CHECK(w.other_parts.count("extra layers (MTP)") == 1);
  // Gemma 4 E-models' projection into the per-layer inputs: with block 0 in a GGUF (llama.cpp loads it with bid 0),
  // with the embeddings in an HF checkpoint (as param_inventory counts it).
  Checkpoint g;
  g.tensors = {{"per_layer_model_proj.weight", "F16", 10, 20}, {"per_layer_proj_norm.weight", "F32", 2, 8},
               {"model.language_model.per_layer_model_projection.weight", "BF16", 10, 20},
               {"model.language_model.per_layer_projection_norm.weight", "BF16", 2, 4}};
  const StoredWeights gw = stored_weights(g, 2);
  CHECK(gw.language.per_layer[0].in(unit::bytes) == 28);
  CHECK(gw.language.embedding.in(unit::bytes) == 24);
  CHECK(gw.other.in(unit::bytes) == 0);
  CHECK(stored_language_weights(w, c).nearest == WeightFormat::gptq_int4);
}

TEST_CASE("checkpoint: ModelOpt NVFP4 and its FP8 layers counted as weights", "[checkpoint]") {
  // nvidia/*-NVFP4 layout: an expert's weight as U8 [out, in/2], weight_scale E4M3 [out, in/16], weight_scale_2 and
  // input_scale fp32 scalars; MIXED_PRECISION keeps attention in FP8 (weight F8_E4M3, fp32 scales).
  Checkpoint c;
  c.format = "safetensors";
  c.quantization = "modelopt";
  c.tensors = {
      {"model.layers.0.mlp.experts.0.up_proj.weight", "U8", 512 * 2048 / 2, 512 * 2048 / 2},
      {"model.layers.0.mlp.experts.0.up_proj.weight_scale", "F8_E4M3", 512 * 2048 / 16, 512 * 2048 / 16},
      {"model.layers.0.mlp.experts.0.up_proj.weight_scale_2", "F32", 1, 4},
      {"model.layers.0.mlp.experts.0.up_proj.input_scale", "F32", 1, 4},
      {"model.layers.0.self_attn.o_proj.weight", "F8_E4M3", 2048 * 1024, 2048 * 1024},
      {"model.layers.0.self_attn.o_proj.weight_scale", "F32", 1, 4},
  };
  const StoredWeights w = stored_weights(c, 1);
  CHECK(w.language_params.in(unit::params) == 512 * 2048 + 2048 * 1024);  // scales are bytes, not weights
  CHECK(w.language.per_layer[0].in(unit::bytes) == 512 * 2048 / 2 + 512 * 2048 / 16 + 4 + 4 + 2048 * 1024 + 4);
  CHECK(stored_language_weights(w, c).nearest == WeightFormat::fp8);  // FP8 bytes dominate here
  c.tensors.resize(4);
  CHECK(stored_language_weights(stored_weights(c, 1), c).nearest == WeightFormat::nvfp4);
}

TEST_CASE("serving: stored bytes are the weights unless --weights names a format", "[checkpoint]") {
  const ModelSpec& s = find_preset("llama-3.1-8b").spec;
  InferenceWorkload w;
  StoredWeightBytes stored;
  stored.bytes.per_layer.assign(std::size_t(s.layers), Bytes(1e8));
  stored.bytes.layers = Bytes(1e8 * double(s.layers));
  stored.bytes.embedding = Bytes(5e8);
  stored.bytes.output = Bytes(6e8);
  stored.nearest = WeightFormat::q4_k_m;
  stored.label = "test";
  w.stored = stored;
  const auto e = estimate_inference_memory(s, w);
  CHECK(e.weight_bytes.in(unit::bytes) == Approx(1e8 * 32 + 5e8 + 6e8));
  CHECK(e.weights == WeightFormat::q4_k_m);
  w.weights = WeightFormat::bf16;
  CHECK(estimate_inference_memory(s, w).weight_bytes.in(unit::bytes) == Approx(8'030'261'248.0 * 2));
}
