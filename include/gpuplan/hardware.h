// Accelerators and cloud offerings as value types, and the fit of a per-GPU memory estimate on a device.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cmath>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "error.h"
#include "names.h"
#include "units.h"

namespace gpuplan {

// Dense peak rates in FLOP/s (2:4-sparse headline figures are halved in the catalog); nullopt where the device
// has no such path.
struct PeakFlops {
  std::optional<double> fp64, fp32, tf32, bf16, fp16, fp8, int8, fp4;
  bool operator==(const PeakFlops&) const = default;
};

struct Device {
  std::string id;
  std::vector<std::string> aliases;
  std::string vendor;
  std::string name;
  std::string segment;
  std::string unit;                       // "per GPU", "per chip", ...
  Bytes memory{0};                        // the vendor's capacity (decimal GB as marketed)
  std::optional<Bytes> usable_memory;     // what the driver reports (nvidia-smi total), before the CUDA context
  // What CUDA reports as the device total (cudaMemGetInfo), a few hundred MiB below nvidia-smi's: the base of
  // vLLM's gpu_memory_utilization budget.
  std::optional<Bytes> cuda_total_memory;
  std::string memory_type;
  ByteRate memory_bandwidth{0};
  PeakFlops peak;                         // with fp32 accumulate on GeForce
  PeakFlops fp16_accumulate;              // GeForce fp16-accumulate rates, a separate (faster) path
  std::optional<double> tdp_watts;
  // Maximum achievable matmul FLOP/s (large bf16 GEMMs, best shape) as a share of the dense bf16 peak, measured.
  std::optional<double> matmul_efficiency;
  // The same in a short burst at the boost clock (the MAMF finder's 100 iterations), where it is above the sustained
  // rate: the rate a GPU's power limit lets GEMMs reach between lighter kernels (step_time.h gemm_power_limit).
  std::optional<double> matmul_burst_efficiency;
  // The boost clock of the GPU's cores (Hz), from its vendor's specification: a kernel's fixed cost is a number of
  // cycles (throughput.h KernelFloor).
  std::optional<double> boost_clock_hz;
  std::string interconnect;
  std::optional<ByteRate> interconnect_bandwidth;  // per GPU, bidirectional (NVIDIA convention)
  std::optional<int> pcie_gen;
  std::string form_factor;
  std::optional<int> launch_year;
  std::optional<double> price_usd;
  std::string price_note;
  std::string source;
  std::string verification;
  std::string notes;
  std::string origin;  // catalog file the entry came from

  // What a process can use: the driver's total when known, else the vendor capacity.
  Bytes capacity() const { return usable_memory ? *usable_memory : memory; }
  // What cudaMemGetInfo calls the total: measured where known, else the driver's total.
  Bytes cuda_total() const { return cuda_total_memory ? *cuda_total_memory : capacity(); }
  // Whether `name` is its id, one of its aliases or its name, ignoring case and punctuation ("H100 SXM", "rtx4090").
  bool named(const std::string& typed) const {
    const std::string k = name_key(typed);
    auto same = [&](const std::string& x) { return name_key(x) == k; };

    return same(id) || same(name) || std::any_of(aliases.begin(), aliases.end(), same);
  }
  bool operator==(const Device&) const = default;
};

// The device with its board power limit set to `watts` (nvidia-smi -pl) below the TDP its catalog rates hold at.
// Where the catalog measures a matmul rate below the datasheet's (matmul_efficiency, matmul_burst_efficiency: GEMMs
// held by the power limit, as the H100 PCIe's 65.6 %), that rate scales by watts / TDP: a GEMM's energy per FLOP
// taken as fixed as the clock falls (power proportional to the clock, as step_time.h gemm_power_limit takes it; the
// lower voltage of a lower clock would save more: an upper bound on the slowdown). A device without a measurement
// is not taken as power-bound: XiongjieDai's RTX 3090s at 185–270 W process an F16 prompt (pp512) at 4,122.66,
// 4,608.40 and 3,875.97 tokens/s on 2, 4 and 6 GPUs against 4,444.65 for one at 370 W. A limit at or above the
// TDP changes nothing.
inline Device at_power_limit(const Device& d, double watts) {
  if (!(watts > 0) || !std::isfinite(watts)) throw InputError("--power-limit must be a positive number of watts");
  if (!d.tdp_watts || !(*d.tdp_watts > 0)) throw InputError(d.id + " has no TDP in the catalog to set a power limit against");
  const double share = std::min(1.0, watts / *d.tdp_watts);
  Device limited = d;
  if (limited.matmul_efficiency) *limited.matmul_efficiency *= share;
  if (limited.matmul_burst_efficiency) *limited.matmul_burst_efficiency *= share;
  return limited;
}

// Metal's recommendedMaxWorkingSetSize on a unified-memory Mac: what its GPU buffers may take, which ggml-metal
// reports as the device's total (llama.cpp and Ollama place layers for it): 2/3 of RAM below 36 GB, 3/4 from 36 GB
// (logged: 5,726.63 MB on an 8 GB M1, run-llama/llama_index PR #13139; 11,453.25 MB on a 16 GB M4, llama.cpp issue
// #11083; 38,654.71 MB on a 48 GB M3 Max, LLamaSharp issue #835; Apple's catalog note in data/hardware/apple.json).
// `sysctl iogpu.wired_limit_mb` raises it.
inline Bytes metal_working_set(Bytes ram) {
  const double b = ram.in(unit::bytes);
  return Bytes(b * (b >= 36.0 * 1073741824.0 ? 3.0 / 4.0 : 2.0 / 3.0));
}

// A PCIe x16 link's bandwidth each way: 2.5 and 5 GT/s a lane for gen 1 and 2 (8b/10b coding), 8 GT/s for gen 3
// doubling each generation after (128b/130b): 15.75, 31.5 and 63 GB/s for gen 3, 4 and 5 (PCI-SIG specifications).
inline double pcie_x16_bytes_per_s(int gen) {
  const double gt = gen <= 1 ? 2.5 : gen == 2 ? 5.0 : 8.0 * std::pow(2.0, gen - 3);
  return gt * 1e9 * 16 * (gen >= 3 ? 128.0 / 130.0 : 0.8) / 8;
}

struct Offering {
  std::string provider;
  std::string instance;
  std::string accelerator;  // Device id
  int count = 1;
  // Pods of count..max_count GPUs in steps of count, each step at the listed price (RunPod: a pod takes 1–8 GPUs of
  // a type); none: the instance is `count` GPUs.
  std::optional<int> max_count;
  std::optional<UsdPerHour> on_demand;  // per instance
  std::optional<UsdPerHour> spot;       // only where the provider publishes one
  std::string region;
  std::string as_of;
  std::string source;
  std::string status;
  std::string origin;
  std::optional<UsdPerHour> per_accelerator_on_demand() const {
    if (!on_demand) return std::nullopt;
    return UsdPerHour(on_demand->in(unit::usd_per_hour) / count);
  }
  bool operator==(const Offering&) const = default;
};

struct FitVerdict {
  std::string device;
  Bytes capacity{0};
  Bytes required{0};
  bool fits = false;
  Bytes headroom{0};      // capacity − required (negative when it does not fit)
  double used_fraction = 0;
};

inline FitVerdict fit_on(const Device& d, Bytes required) {
  FitVerdict v;
  v.device = d.id;
  v.capacity = d.capacity();
  v.required = required;
  v.headroom = v.capacity - required;
  v.fits = required <= v.capacity;
  v.used_fraction = required / v.capacity;
  return v;
}

struct FitRow {
  const Device* device = nullptr;
  FitVerdict single;                    // the workload as estimated
  std::optional<std::int64_t> gpus_needed;  // smallest power of two ≤ max_gpus whose per-GPU estimate fits
  double needed_used_fraction = 0;          // that estimate's share of the usable memory, at gpus_needed GPUs
};

// Per-device fit of a workload; `per_gpu(n)` gives the per-GPU requirement when spread over n GPUs (the caller
// says how: ZeRO-3 for training, an even tensor-parallel split for serving), and `lower(n)` a cheap bound it never
// exceeds. A device's answer is the smallest power of two n whose requirement fits: n where even the bound does
// not fit are skipped without the full estimate, and each n is estimated at most once, whatever the devices.
template <class PerGpu, class LowerBound>
std::vector<FitRow> fit_table(const std::vector<Device>& devices, Bytes required, PerGpu per_gpu, LowerBound lower,
                              std::int64_t max_gpus = 1024) {
  std::vector<std::int64_t> ns;
  for (std::int64_t n = 1; n <= max_gpus; n *= 2) ns.push_back(n);
  std::vector<std::optional<Bytes>> full(ns.size()), bound(ns.size());
  auto memo = [](std::optional<Bytes>& slot, auto&& f, std::int64_t n) {
    if (!slot) slot = f(n);
    return *slot;
  };
  std::vector<FitRow> rows;
  for (const auto& d : devices) {
    FitRow r;
    r.device = &d;
    r.single = fit_on(d, required);
    for (std::size_t i = 0; i < ns.size(); ++i) {
      if (memo(bound[i], lower, ns[i]) > d.capacity()) continue;
      if (memo(full[i], per_gpu, ns[i]) <= d.capacity()) {
        r.gpus_needed = ns[i];
        r.needed_used_fraction = *full[i] / d.capacity();
        break;
      }
    }
    rows.push_back(r);
  }
  return rows;
}

}  // namespace gpuplan
