#include "../test_support.h"
#include <catch2/catch.hpp>
#include <cmath>
#include <gpuplan/memory/inference.h>
#include <gpuplan/memory/training.h>
#include <gpuplan/builtin.h>
#include <gpuplan/catalog.h>

using namespace gpuplan;


TEST_CASE("builtin_catalog: covers the accelerators users rent or buy", "[catalog]") {
  const Catalog& c = builtin_catalog();
  for (const char* id : {"rtx-3090", "rtx-4090", "rtx-5090", "rtx-a6000", "rtx-6000-ada", "rtx-pro-6000-bw",
                         "v100-sxm2-16gb", "v100-sxm2-32gb", "t4", "a10", "a10g", "l4", "l40s", "a100-40gb-sxm",
                         "a100-40gb-pcie", "a100-80gb-sxm", "a100-80gb-pcie", "h100-sxm", "h100-pcie", "h100-nvl",
                         "h200-sxm", "h20", "b200", "b300", "gb200-per-gpu", "mi250x", "mi300x", "mi325x", "mi355x",
                         "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-v7", "trainium1", "trainium2", "inferentia2",
                         "gaudi2", "gaudi3",
                         // issue #42 item 5: the cards and unified-memory machines people run models on
                         "rtx-3060-12gb", "rtx-3070", "rtx-3080-10gb", "rtx-3080-12gb", "rtx-3080-ti", "rtx-4060",
                         "rtx-4060-ti-8gb", "rtx-4060-ti-16gb", "rtx-4070", "rtx-4070-super", "rtx-4070-ti",
                         "rtx-4070-ti-super", "rtx-4080", "rtx-4080-super", "rtx-5060-ti-16gb", "rtx-5070", "rtx-5070-ti",
                         "rtx-5080", "rtx-a4000", "rtx-a5000", "a40", "l40", "v100-pcie-16gb", "v100-pcie-32gb",
                         "apple-m1", "apple-m1-pro", "apple-m1-max", "apple-m1-ultra", "apple-m2", "apple-m2-pro",
                         "apple-m2-max", "apple-m2-ultra", "apple-m3", "apple-m3-pro", "apple-m3-max", "apple-m3-ultra",
                         "apple-m4", "apple-m4-pro", "apple-m4-max", "rx-7900-xtx", "radeon-pro-w7900",
                         "dgx-spark-gb10", "ryzen-ai-max-395"}) {
    INFO(id);
    CHECK(c.find(id) != nullptr);
  }
  for (const char* p : {"aws", "gcp", "azure", "lambda", "coreweave", "runpod", "vast.ai"}) {
    INFO(p);
    CHECK(std::any_of(c.offerings.begin(), c.offerings.end(), [&](const Offering& f) { return f.provider == p; }));
  }
}

TEST_CASE("builtin_catalog: capacities in the memory's own unit, multi-die parts as software sees them", "[catalog]") {
  const Catalog& c = builtin_catalog();
  // An "80 GB" H100 is five 16 GiB HBM3 stacks; nvidia-smi's 81,559 MiB sits below the 81,920 MiB.
  CHECK(c.get("h100-sxm").memory.in(unit::bytes) == 80.0 * 1073741824.0);
  CHECK(c.get("h200-sxm").memory.in(unit::bytes) == 141.0 * 1073741824.0);
  CHECK(c.get("trainium2").memory.in(unit::bytes) == 96.0 * 1073741824.0);
  // ROCm lists each of an MI250X module's two GCDs as a 64 GB GPU: the entry is one of them.
  const Device& gcd = c.get("mi250x");
  CHECK(gcd.memory.in(unit::bytes) == 64.0 * 1073741824.0);
  CHECK(gcd.memory_bandwidth.in(unit::bytes_per_s) == Approx(1.6384e12));
  // Unified-memory machines: the whole pool, with the GPU's share said where the vendor fixes it.
  CHECK(c.get("dgx-spark").memory.in(unit::bytes) == 128.0 * 1073741824.0);
  CHECK(c.get("strix-halo").capacity().in(unit::bytes) == 96.0 * 1073741824.0);
}

TEST_CASE("builtin_catalog: every entry has a source and sane numbers", "[catalog]") {
  for (const auto& d : builtin_catalog().devices) {
    INFO(d.id);
    CHECK(!d.source.empty());
    CHECK(d.memory_bandwidth.in(unit::bytes_per_s) > 1e10);
    CHECK(d.memory.in(unit::bytes) >= 8e9);
    // Capacities are binary (DRAM dies and HBM stacks come in GiB), so what the driver reports never exceeds them.
    if (d.usable_memory) CHECK(d.usable_memory->in(unit::bytes) <= d.memory.in(unit::bytes));
    CHECK(std::fmod(d.memory.in(unit::bytes), 1073741824.0) == 0);
    // CUDA's total sits a few hundred MiB below the driver's (0.3–0.9 GiB in the logged ones): a figure further
    // off is a typo or the wrong device.
    if (d.cuda_total_memory && d.usable_memory) {
      CHECK(d.cuda_total_memory->in(unit::bytes) < d.usable_memory->in(unit::bytes));
      CHECK(d.cuda_total_memory->in(unit::bytes) > d.usable_memory->in(unit::bytes) - 1.0 * 1073741824.0);
    }
    // Dense figures: 16-bit tensor rates at least the fp32 rate, fp8 at least 16-bit, and no device above 10 PFLOP/s
    // dense bf16 (the largest, GB200, is 2.5 PFLOP/s; a 2:4-sparse headline would be double).
    if (d.peak.bf16 && d.peak.fp32) CHECK(*d.peak.bf16 >= *d.peak.fp32);
    if (d.peak.fp8 && d.peak.bf16) CHECK(*d.peak.fp8 >= *d.peak.bf16 * 0.99);
    if (d.peak.bf16) CHECK(*d.peak.bf16 < 3e15);
    if (d.fp16_accumulate.fp16) CHECK(*d.fp16_accumulate.fp16 >= *d.peak.fp16);
  }
  for (const auto& f : builtin_catalog().offerings) {
    INFO(f.provider << " " << f.instance);
    CHECK(!f.source.empty());
    CHECK(!f.as_of.empty());
    CHECK(f.count >= 1);
    if (f.on_demand) CHECK(f.per_accelerator_on_demand()->in(unit::usd_per_hour) < 50);
  }
}

TEST_CASE("builtin_catalog: reference figures", "[catalog]") {
  const Catalog& c = builtin_catalog();
  // H100 SXM: 989.4 TFLOP/s dense bf16 (datasheet prints 1,979 with sparsity), 3.35 TB/s, 81,559 MiB usable.
  const Device& h100 = c.get("H100");  // alias, case-insensitive
  CHECK(h100.id == "h100-sxm");
  CHECK(*h100.peak.bf16 == Approx(989.4e12));
  CHECK(h100.memory_bandwidth.in(unit::bytes_per_s) == Approx(3.35e12));
  CHECK(h100.usable_memory->in(unit::bytes) / 1048576.0 == Approx(81559).epsilon(0.001));
  // RTX 4090: 165.2 TFLOP/s bf16 with fp32 accumulate, 330.3 with fp16 accumulate (Ada whitepaper v2.02).
  const Device& g = c.get("4090");
  CHECK(*g.peak.bf16 == Approx(165.2e12));
  CHECK(*g.fp16_accumulate.fp16 == Approx(330.3e12));
  CHECK_THROWS_AS(c.get("h900"), InputError);
  // CUDA totals as users' logs print them (two decimals of GiB): vLLM's budget base.
  CHECK(c.get("rtx-3090").cuda_total().in(unit::bytes) / 1073741824.0 == Approx(23.58).margin(0.005));
  CHECK(c.get("a100-80gb").cuda_total().in(unit::bytes) / 1073741824.0 == Approx(79.14).margin(0.005));
  // The A800 80GB: the A100's memory, its own CUDA total (79.25 GiB in a November 2025 log) and an id that is not an
  // A100's (vLLM's batch defaults test the device name).
  CHECK(c.get("a800").cuda_total().in(unit::bytes) / 1073741824.0 == Approx(79.25).margin(0.005));
  CHECK(c.get("a800").id.rfind("a100", 0) == std::string::npos);
  CHECK(c.get("l40s").cuda_total().in(unit::bytes) / 1073741824.0 == Approx(44.53).margin(0.005));
}

TEST_CASE("load_catalog: user files override and extend", "[catalog]") {
  const Catalog c = load_catalog({test::data + "/catalogs/override.json"});
  CHECK(c.get("h100").name == "H100 with a custom driver limit");  // aliases of the replaced entry are the new one's
  CHECK(c.get("h100-sxm").capacity().in(unit::bytes) == 70e9);
  CHECK(c.get("asic").id == "my-asic");
  CHECK(c.devices.size() == builtin_catalog().devices.size() + 1);
  CHECK(std::any_of(c.offerings.begin(), c.offerings.end(), [](const Offering& f) { return f.provider == "acme-cloud"; }));
}

TEST_CASE("load_catalog: errors name the file, the JSON pointer and the problem", "[catalog]") {
  CHECK_THROWS_WITH(load_catalog({test::data + "/catalogs/invalid.json"}),
                    Catch::Contains("invalid.json: /devices/0/memory_bytes: expected a positive number") &&
                        Catch::Contains("/devices/0/peak_flops/fp9") && Catch::Contains("/devices/1/id"));
  CHECK_THROWS_WITH(load_catalog({test::data + "/catalogs/bad_offering.json"}), Catch::Contains("unknown accelerator \"nope\""));
  CHECK_THROWS_AS(load_catalog({test::data + "/catalogs/none.json"}), DataError);
  CHECK_THROWS_AS(load_catalog({test::data + "/configs/malformed.json"}), DataError);
  // A pod's max_count is a whole multiple of its count.
  auto pod = [](const char* count, const char* max_count) {
    Catalog c = builtin_catalog();
    detail::merge_catalog_json(c, nlohmann::json::parse(std::string(R"({"offerings": [{"provider": "p", "instance": "pod",
        "accelerator": "h100-sxm", "as_of": "2026", "source": "s", "on_demand_usd_per_hour": 2, "count": )") + count +
                                                 ", \"max_count\": " + max_count + "}]}"),
                       "pod.json");
    return c.offerings.back().max_count;
  };
  CHECK(pod("2", "8") == 8);
  CHECK_THROWS_WITH(pod("2", "7"), Catch::Contains("pod.json: /offerings/0/max_count: expected a whole multiple of count"));
  CHECK_THROWS_WITH(pod("4", "2"), Catch::Contains("/max_count"));
  CHECK_THROWS_WITH(pod("1", "8.5"), Catch::Contains("/max_count"));
  CHECK_THROWS_WITH(pod("1", "1e9"), Catch::Contains("/max_count"));
}

TEST_CASE("fit_on and fit_table", "[hardware]") {
  const Device& h100 = builtin_catalog().get("h100-sxm");
  const FitVerdict v = fit_on(h100, gib(70));
  CHECK(v.fits);
  CHECK(v.headroom.in(unit::bytes) == Approx(81559.0 * 1048576 - 70.0 * 1073741824));
  CHECK_FALSE(fit_on(h100, gib(80)).fits);
  // 300 GiB that halves with every doubling: 4 × H100 (75 GiB each) fit, 2 do not.
  // The bound (here 90 % of the requirement) skips the full estimate where even it does not fit: only n = 4 is
  // estimated in full, and n = 8 never, the answer being found.
  std::vector<std::int64_t> estimated;
  auto need = [&](std::int64_t n) {
    estimated.push_back(n);
    return gib(300.0 / double(n));
  };
  auto bound = [](std::int64_t n) { return gib(0.9 * 300.0 / double(n)); };
  const auto rows = fit_table(std::vector<Device>{h100}, gib(300), need, bound);
  CHECK_FALSE(rows[0].single.fits);
  CHECK(rows[0].gpus_needed == 4);
  CHECK(estimated == std::vector<std::int64_t>{4});
  // Each n is estimated once, whatever the number of devices.
  estimated.clear();
  const auto two = fit_table(std::vector<Device>{h100, h100}, gib(300), need, bound);
  CHECK(two[1].gpus_needed == 4);
  CHECK(estimated == std::vector<std::int64_t>{4});
}

TEST_CASE("the lower bounds never exceed the full estimates", "[hardware][memory]") {
  for (const char* id : {"gpt2", "llama-3.2-1b", "gemma-2-2b", "mixtral-8x7b"}) {
    const ModelSpec& s = find_preset(id).spec;
    for (std::int64_t n : {1, 2, 8, 64}) {
      TrainingWorkload w;
      w.gpus = n;
      w.zero = n > 1 ? 3 : 0;
      w.precision = n == 2 ? Precision::amp_bf16 : Precision::bf16;
      CHECK(training_memory_lower_bound(s, w) <= estimate_training_memory(s, w).memory.total);
      InferenceWorkload v;
      v.tp = n <= 8 && s.kv_heads % n == 0 && s.heads % n == 0 ? n : 1;
      v.batch = n;
      CHECK(inference_memory_lower_bound(s, v) <= estimate_inference_memory(s, v).memory.total);
    }
  }
}

TEST_CASE("fuzz regression: a number beyond double range is a DataError, not a crash", "[catalog][regression]") {
  // Found by tests/fuzz/fuzz_catalog: nlohmann::json throws out_of_range (not parse_error) for 1e1216.
  CHECK_THROWS_WITH(detail::parse_json_file("x.json", R"({"devices": [{"memory_bytes": 1e1216}]})"),
                    Catch::Contains("x.json: not valid JSON (number overflow"));
}

TEST_CASE("builtin_catalog_dates: the build's dates are the parsed catalogs' dates", "[catalog]") {
  std::string parsed;
  for (const auto& d : builtin_catalog().dates) parsed += d + "\n";
  CHECK(std::string(detail::builtin_catalog_dates) == parsed);
  CHECK(!parsed.empty());
}

TEST_CASE("builtin tables: what the build wrote is what the JSON parsers return now", "[catalog][tables]") {
  // A field added to a struct but not to tables.h's list, or data edited without a rebuild, differs here.
  CHECK(builtin_catalog() == detail::parse_builtin_catalog());
  CHECK(builtin_presets() == detail::parse_presets());
  CHECK(builtin_catalog().devices.size() > 30);
  CHECK(builtin_presets().size() > 30);
  // The round trip keeps what the list names, optional and empty values included.
  Device d;
  d.id = "x";
  d.aliases = {"a", ""};
  d.usable_memory = Bytes(3.5);
  d.peak.bf16 = 1e15;
  const std::string bytes = tables::write(d);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  CHECK(tables::read<Device>(p, bytes.size()) == d);
  ModelSpec s = find_preset("gemma-2-2b").spec;
  CHECK(!s.sliding_layers.empty());
  const std::string sb = tables::write(s);
  CHECK(tables::read<ModelSpec>(reinterpret_cast<const unsigned char*>(sb.data()), sb.size()) == s);
}

TEST_CASE("builtin tables: truncated or padded bytes are a DataError", "[catalog][tables]") {
  Offering f;
  f.provider = "p";
  f.on_demand = UsdPerHour(2.0);
  const std::string bytes = tables::write(f);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (std::size_t n : {std::size_t(0), std::size_t(7), std::size_t(8), bytes.size() - 1})
    CHECK_THROWS_AS(tables::read<Offering>(p, n), DataError);
  const std::string padded = bytes + "x";
  CHECK_THROWS_AS(tables::read<Offering>(reinterpret_cast<const unsigned char*>(padded.data()), padded.size()),
                  DataError);
  // A count larger than the bytes left (here: a string claiming 2^62 characters) is refused before allocating.
  std::string huge(8, '\0');
  huge[7] = 0x40;
  CHECK_THROWS_AS(tables::read<std::string>(reinterpret_cast<const unsigned char*>(huge.data()), huge.size()),
                  DataError);
}

TEST_CASE("Catalog::find: names as people type them, each naming one device", "[catalog][names]") {
  const Catalog& c = builtin_catalog();
  for (const auto& [typed, id] : std::vector<std::pair<std::string, std::string>>{
           {"rtx4090", "rtx-4090"}, {"H100 SXM", "h100-sxm"}, {"NVIDIA H100", "h100-sxm"}, {"h100_pcie", "h100-pcie"},
           {"GeForce RTX 4090", "rtx-4090"}, {"MI300X", "mi300x"}, {"A100 80GB SXM", "a100-80gb-sxm"}}) {
    INFO(typed);
    const Device* d = c.find(typed);
    REQUIRE(d != nullptr);
    CHECK(d->id == id);
  }
  // No spelling of one device is another's: each id, alias and name finds its own device.
  for (const auto& d : c.devices) {
    std::vector<std::string> spellings = d.aliases;
    spellings.push_back(d.id);
    spellings.push_back(d.name);
    for (const auto& s : spellings) {
      INFO(d.id << " as " << s);
      CHECK(c.find(s)->id == d.id);
    }
  }
  CHECK(c.find("h100-sxm6") == nullptr);
  CHECK_THROWS_WITH(c.get("rtx-4095"), Catch::Contains("did you mean") && Catch::Contains("rtx-4090"));
  CHECK_THROWS_WITH(c.get("zzzz"), !Catch::Contains("did you mean") && Catch::Contains("gpuplan hardware list"));
}
