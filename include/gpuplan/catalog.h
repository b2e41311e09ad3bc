// Hardware and price catalogs: parse, validate (docs/schema/catalog.schema.json) and merge catalog files — the
// built-in ones (data/hardware, data/pricing; parsed at build time, see builtin.h) and user files (--catalog FILE).
#pragma once
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <gpuplan/builtin_data.h>
#include <nlohmann/json.hpp>

#include "error.h"
#include "hardware.h"

namespace gpuplan {

struct Catalog {
  std::vector<Device> devices;
  std::vector<Offering> offerings;
  std::vector<std::string> dates;  // as_of of each file, for --version and reports

  // By id, alias or name, ignoring case and punctuation; a vendor's name before it is optional ("NVIDIA H100").
  const Device* find(const std::string& name) const {
    for (const auto& d : devices)
      if (d.named(name)) return &d;
    const std::string k = name_key(name);
    for (const auto& d : devices)
      if (const std::string v = name_key(d.vendor); !v.empty() && k.size() > v.size() && k.compare(0, v.size(), v) == 0 &&
                                                     d.named(k.substr(v.size())))
        return &d;
    return nullptr;
  }
  const Device& get(const std::string& name) const {
    if (const Device* d = find(name)) return *d;
    std::vector<NameCandidate> known;
    for (const auto& d : devices) {
      known.push_back({d.id, d.aliases});
      known.back().spellings.push_back(d.id);
    }
    const std::string hint = did_you_mean(name, known);
    throw InputError("unknown accelerator \"" + name + "\"" + (hint.empty() ? "" : ": " + hint) +
                     " (see `gpuplan hardware list`)");
  }
  bool operator==(const Catalog&) const = default;
};

namespace detail {

// Collects every problem of a file, then throws one DataError listing them.
class Validator {
 public:
  explicit Validator(std::string file) : file_(std::move(file)) {}
  void problem(const std::string& pointer, const std::string& what) { problems_.push_back(file_ + ": " + pointer + ": " + what); }
  bool ok() const { return problems_.empty(); }
  void raise() const {
    if (problems_.empty()) return;
    std::string msg = problems_.front();
    if (problems_.size() > 1) msg += " (and " + std::to_string(problems_.size() - 1) + " more: ";
    for (std::size_t i = 1; i < problems_.size() && i < 4; ++i) msg += (i > 1 ? "; " : "") + problems_[i];
    if (problems_.size() > 1) msg += problems_.size() > 4 ? "; ...)" : ")";
    throw DataError(msg);
  }

  std::string str(const nlohmann::json& o, const std::string& ptr, const char* key, bool required = true) {
    if (!o.contains(key) || o[key].is_null()) {
      if (required) problem(ptr + "/" + key, "missing (expected a string)");
      return "";
    }
    if (!o[key].is_string() || (required && o[key].get<std::string>().empty())) {
      problem(ptr + "/" + key, "expected a non-empty string");
      return "";
    }
    return o[key].get<std::string>();
  }
  std::optional<double> num(const nlohmann::json& o, const std::string& ptr, const char* key, bool required) {
    if (!o.contains(key) || o[key].is_null()) {
      if (required) problem(ptr + "/" + key, "missing (expected a positive number)");
      return std::nullopt;
    }
    if (!o[key].is_number() || !(o[key].get<double>() > 0) || !std::isfinite(o[key].get<double>())) {
      problem(ptr + "/" + key, "expected a positive number");
      return std::nullopt;
    }
    return o[key].get<double>();
  }

 private:
  std::string file_;
  std::vector<std::string> problems_;
};

inline PeakFlops parse_flops(Validator& v, const nlohmann::json& o, const std::string& ptr) {
  PeakFlops p;
  if (o.is_null()) return p;
  if (!o.is_object()) {
    v.problem(ptr, "expected an object of dense FLOP/s by format");
    return p;
  }
  for (const auto& [k, _] : o.items())
    if (k != "fp64" && k != "fp32" && k != "tf32" && k != "bf16" && k != "fp16" && k != "fp8" && k != "int8" && k != "fp4")
      v.problem(ptr + "/" + k, "unknown format (expected fp64, fp32, tf32, bf16, fp16, fp8, int8, fp4)");
  p.fp64 = v.num(o, ptr, "fp64", false);
  p.fp32 = v.num(o, ptr, "fp32", false);
  p.tf32 = v.num(o, ptr, "tf32", false);
  p.bf16 = v.num(o, ptr, "bf16", false);
  p.fp16 = v.num(o, ptr, "fp16", false);
  p.fp8 = v.num(o, ptr, "fp8", false);
  p.int8 = v.num(o, ptr, "int8", false);
  p.fp4 = v.num(o, ptr, "fp4", false);
  return p;
}

inline Device parse_device(Validator& v, const nlohmann::json& o, const std::string& ptr) {
  Device d;
  if (!o.is_object()) {
    v.problem(ptr, "expected an object");
    return d;
  }
  d.id = v.str(o, ptr, "id");
  d.name = v.str(o, ptr, "name");
  d.vendor = v.str(o, ptr, "vendor");
  d.source = v.str(o, ptr, "source");
  d.segment = v.str(o, ptr, "segment", false);
  d.unit = v.str(o, ptr, "unit", false);
  d.memory_type = v.str(o, ptr, "memory_type", false);
  d.form_factor = v.str(o, ptr, "form_factor", false);
  d.verification = v.str(o, ptr, "verification", false);
  d.notes = v.str(o, ptr, "notes", false);
  if (o.contains("aliases")) {
    if (!o["aliases"].is_array()) v.problem(ptr + "/aliases", "expected an array of strings");
    else
      for (std::size_t i = 0; i < o["aliases"].size(); ++i) {
        if (o["aliases"][i].is_string()) d.aliases.push_back(o["aliases"][i].get<std::string>());
        else v.problem(ptr + "/aliases/" + std::to_string(i), "expected a string");
      }
  }
  if (auto m = v.num(o, ptr, "memory_bytes", true)) d.memory = Bytes(*m);
  if (auto u = v.num(o, ptr, "usable_memory_bytes", false)) {
    d.usable_memory = Bytes(*u);
    // memory_bytes is the physical capacity, binary like the dies and stacks (80 GB of HBM = 80 GiB): nothing above it.
    if (*u > d.memory.in(unit::bytes))
      v.problem(ptr + "/usable_memory_bytes", "exceeds the physical capacity memory_bytes (a marketed GB of DRAM is a GiB)");
  }
  if (auto c = v.num(o, ptr, "cuda_total_memory_bytes", false)) {
    d.cuda_total_memory = Bytes(*c);
    if (*c > d.capacity().in(unit::bytes)) v.problem(ptr + "/cuda_total_memory_bytes", "exceeds the driver's total");
  }
  if (auto bw = v.num(o, ptr, "memory_bandwidth_bytes_per_s", true)) d.memory_bandwidth = ByteRate(*bw);
  d.peak = parse_flops(v, o.value("peak_flops", nlohmann::json()), ptr + "/peak_flops");
  // Every rate may be null: Apple publishes none for M3/M4 and NVIDIA only GB10's FP4. Such a device gets memory
  // verdicts; time, throughput and cost say they need a rate.
  d.fp16_accumulate = parse_flops(v, o.value("fp16_accumulate_flops", nlohmann::json()), ptr + "/fp16_accumulate_flops");
  if (d.fp16_accumulate.fp16 && d.peak.fp16 && *d.fp16_accumulate.fp16 < *d.peak.fp16)
    v.problem(ptr + "/fp16_accumulate_flops/fp16", "below the fp32-accumulate rate (fields swapped?)");
  d.tdp_watts = v.num(o, ptr, "tdp_watts", false);
  d.matmul_efficiency = v.num(o, ptr, "matmul_efficiency", false);
  if (d.matmul_efficiency && !(*d.matmul_efficiency > 0 && *d.matmul_efficiency <= 1))
    throw DataError(ptr + "/matmul_efficiency: expected a share in (0, 1]");
  d.matmul_burst_efficiency = v.num(o, ptr, "matmul_burst_efficiency", false);
  if (d.matmul_burst_efficiency && !(*d.matmul_burst_efficiency > 0 && *d.matmul_burst_efficiency <= 1))
    throw DataError(ptr + "/matmul_burst_efficiency: expected a share in (0, 1]");
  d.boost_clock_hz = v.num(o, ptr, "boost_clock_hz", false);
  if (d.boost_clock_hz && !(*d.boost_clock_hz >= 1e8 && *d.boost_clock_hz <= 5e9))
    throw DataError(ptr + "/boost_clock_hz: expected a clock between 100 MHz and 5 GHz");
  if (o.contains("interconnect") && o["interconnect"].is_object()) {
    d.interconnect = v.str(o["interconnect"], ptr + "/interconnect", "kind", false);
    if (auto b = v.num(o["interconnect"], ptr + "/interconnect", "bandwidth_bytes_per_s", false)) d.interconnect_bandwidth = ByteRate(*b);
  }
  if (auto g = v.num(o, ptr, "pcie_gen", false)) d.pcie_gen = static_cast<int>(*g);
  if (auto y = v.num(o, ptr, "launch_year", false)) d.launch_year = static_cast<int>(*y);
  if (o.contains("price") && o["price"].is_object()) {
    d.price_usd = v.num(o["price"], ptr + "/price", "usd", false);
    d.price_note = v.str(o["price"], ptr + "/price", "note", false);
  }
  return d;
}

inline Offering parse_offering(Validator& v, const nlohmann::json& o, const std::string& ptr) {
  Offering f;
  if (!o.is_object()) {
    v.problem(ptr, "expected an object");
    return f;
  }
  f.provider = v.str(o, ptr, "provider");
  f.instance = v.str(o, ptr, "instance");
  f.accelerator = v.str(o, ptr, "accelerator");
  f.region = v.str(o, ptr, "region", false);
  f.as_of = v.str(o, ptr, "as_of");
  f.source = v.str(o, ptr, "source");
  f.status = v.str(o, ptr, "status", false);
  if (auto c = v.num(o, ptr, "count", true)) f.count = static_cast<int>(*c);
  if (auto m = v.num(o, ptr, "max_count", false)) {
    if (*m > 1024 || *m != std::floor(*m) || std::int64_t(*m) < f.count || std::int64_t(*m) % std::max(1, f.count) != 0)
      v.problem(ptr + "/max_count", "expected a whole multiple of count, at most 1024");
    else
      f.max_count = static_cast<int>(*m);
  }
  if (auto p = v.num(o, ptr, "on_demand_usd_per_hour", false)) f.on_demand = UsdPerHour(*p);
  if (auto p = v.num(o, ptr, "spot_usd_per_hour", false)) f.spot = UsdPerHour(*p);
  if (!f.on_demand && !f.spot) v.problem(ptr, "needs on_demand_usd_per_hour or spot_usd_per_hour");
  return f;
}

inline void merge_catalog_json(Catalog& cat, const nlohmann::json& j, const std::string& file) {
  Validator v(file);
  if (!j.is_object()) {
    v.problem("", "expected an object with \"devices\" and/or \"offerings\"");
    v.raise();
  }
  if (j.contains("as_of") && j["as_of"].is_string()) cat.dates.push_back(file + " " + j["as_of"].get<std::string>());
  std::vector<Device> devices;
  std::vector<Offering> offerings;
  if (j.contains("devices")) {
    if (!j["devices"].is_array()) v.problem("/devices", "expected an array");
    else
      for (std::size_t i = 0; i < j["devices"].size(); ++i) {
        devices.push_back(parse_device(v, j["devices"][i], "/devices/" + std::to_string(i)));
        devices.back().origin = file;
      }
  }
  if (j.contains("offerings")) {
    if (!j["offerings"].is_array()) v.problem("/offerings", "expected an array");
    else
      for (std::size_t i = 0; i < j["offerings"].size(); ++i) {
        offerings.push_back(parse_offering(v, j["offerings"][i], "/offerings/" + std::to_string(i)));
        offerings.back().origin = file;
      }
  }
  if (!j.contains("devices") && !j.contains("offerings")) v.problem("", "has neither \"devices\" nor \"offerings\"");
  v.raise();
  // A user entry with a known id replaces the built-in one; new ids are added.
  for (auto& d : devices) {
    auto it = std::find_if(cat.devices.begin(), cat.devices.end(), [&](const Device& x) { return x.id == d.id; });
    if (it != cat.devices.end() && d.aliases.empty()) d.aliases = it->aliases;  // an override keeps the known names
    if (it != cat.devices.end()) *it = std::move(d);
    else cat.devices.push_back(std::move(d));
  }
  for (auto& f : offerings) {
    auto it = std::find_if(cat.offerings.begin(), cat.offerings.end(),
                           [&](const Offering& x) { return x.provider == f.provider && x.instance == f.instance; });
    if (it != cat.offerings.end()) *it = std::move(f);
    else cat.offerings.push_back(std::move(f));
  }
}

inline void check_offering_devices(const Catalog& cat) {
  for (const auto& f : cat.offerings)
    if (!cat.find(f.accelerator))
      throw DataError(f.origin + ": offering " + f.provider + " " + f.instance + ": unknown accelerator \"" +
                      f.accelerator + "\"");
}

inline nlohmann::json parse_json_file(const std::string& where, const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // syntax errors, and numbers beyond double range
    throw DataError(where + ": not valid JSON (" + json_problem(e) + ")");
  }
}

inline Catalog parse_builtin_catalog() {
  Catalog cat;
  for (const auto& f : builtin_files) {
    if (f.path.rfind("data/hardware/", 0) != 0 && f.path.rfind("data/pricing/", 0) != 0) continue;
    merge_catalog_json(cat, parse_json_file(std::string(f.path), std::string(f.bytes.begin(), f.bytes.end())),
                       std::string(f.path));
  }
  check_offering_devices(cat);
  return cat;
}

}  // namespace detail

}  // namespace gpuplan
