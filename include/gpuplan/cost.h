// Cost and energy of a run: USD from the instances a setup rents × their price × time, kWh from power × time × PUE, CO2 from grid intensity.
#pragma once
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "catalog.h"
#include "compute.h"
#include "units.h"

namespace gpuplan {

// One pricing rule for train, infer, plan and scale: a setup is priced on instances someone can rent. The GPUs that
// must share a machine (a serving replica's tensor × pipeline group; a training run's node, the GPUs its time puts
// on one NVLink domain) go into one instance of the provider's real sizes; the rest take as many instances as they
// need, and every GPU of a rented instance is paid for.
struct Setup {
  std::int64_t gpus = 1;   // every GPU the run uses
  std::int64_t group = 1;  // GPUs that must share one instance
  // The instances exchange gradients or activations every step (training): a run over several instances needs
  // instances that come in clusters with a fast network.
  bool linked = false;
};

// The smallest instance a linked run spans several of: providers sell their cluster networking (EFA, InfiniBand,
// RoCE) with their 8-GPU HGX instances and AWS's 4-GPU g5.12xlarge class, not with single-GPU VMs or pods; plan
// train's rule since it priced whole instances ("runs beyond one instance use multi-GPU instances").
inline constexpr int cluster_instance_min_gpus = 4;

// A setup's instances of one offering.
struct Rental {
  const Offering* offering = nullptr;
  int gpus_per_instance = 0;  // the offering's count, or the pod size chosen up to its max_count
  std::int64_t instances = 0;
  UsdPerHour per_instance{0};
  bool spot = false;
  UsdPerHour per_hour() const { return UsdPerHour(per_instance.in(unit::usd_per_hour) * double(instances)); }
  UsdPerHour per_gpu_hour() const { return UsdPerHour(per_instance.in(unit::usd_per_hour) / gpus_per_instance); }
  Usd over(Seconds t) const { return t * per_hour(); }
};

// The instances of `f` that run the setup; none when the offering has no price of that kind or no instance of it
// holds the group (or a linked run would span instances too small to come with a cluster network).
inline std::optional<Rental> rent(const Offering& f, const Setup& s, bool spot) {
  const auto& price = spot ? f.spot : f.on_demand;
  if (!price || s.group < 1 || s.gpus < 1) return std::nullopt;
  const std::int64_t count = std::max(1, f.count);
  // A fixed size, or (max_count) a pod of `count`..max_count GPUs in steps of count, at count's price per step:
  // the largest pod the run fills whose GPUs split into whole groups.
  std::int64_t size = count;
  if (f.max_count) {
    size = 0;
    for (std::int64_t k = std::min<std::int64_t>(*f.max_count, std::max(s.gpus, s.group)); k >= count && size == 0; --k)
      if (k % count == 0 && k % s.group == 0) size = k;
  }
  if (size < s.group) return std::nullopt;
  const std::int64_t groups = (s.gpus + s.group - 1) / s.group;
  const std::int64_t per_instance = size / s.group;
  Rental r;
  r.offering = &f;
  r.gpus_per_instance = int(size);
  r.instances = (groups + per_instance - 1) / per_instance;
  if (r.instances > 1 && s.linked && size < cluster_instance_min_gpus) return std::nullopt;
  r.per_instance = UsdPerHour(price->in(unit::usd_per_hour) * double(size / count));
  r.spot = spot;
  return r;
}

// Every offering of the device that runs the setup at a price of the requested kind (spot only where published),
// cheapest per hour first.
inline std::vector<Rental> price_setup(const Catalog& cat, const Device& device, const Setup& s, bool spot,
                                       const std::string& provider = "") {
  std::vector<Rental> out;
  for (const auto& f : cat.offerings) {
    // An offering this device is not named by is another device's; one it is named by is its own unless an
    // earlier device answers to the same name (the catalog's first match wins).
    if (!device.named(f.accelerator) || cat.find(f.accelerator) != &device) continue;
    if (!provider.empty() && f.provider != provider) continue;
    if (auto r = rent(f, s, spot)) out.push_back(*r);
  }
  std::stable_sort(out.begin(), out.end(), [](const Rental& a, const Rental& b) { return a.per_hour() < b.per_hour(); });
  return out;
}

struct EnergyAssumptions {
  // Share of TDP drawn on average. Default 1.0: board power at TDP for the whole run, the convention of Meta's
  // model cards ("peak power capacity per GPU device ... adjusted for power usage efficiency").
  double power_utilization = 1.0;
  // Data-centre power usage effectiveness: 1.2 (typical hyperscale figure, e.g. Google reports ~1.1, the industry
  // average is ~1.5; Uptime Institute surveys).
  double pue = 1.2;
  std::optional<double> grid_kg_per_kwh;  // CO2 intensity of the grid, when the user gives one
};

struct Energy {
  double kwh = 0;
  std::optional<double> co2_kg;
};

inline Energy run_energy(double gpu_hours, double tdp_watts, const EnergyAssumptions& a) {
  if (!(a.power_utilization > 0 && a.power_utilization <= 1.5)) throw InputError("--power-utilization must be in (0, 1.5]");
  if (!(a.pue >= 1.0 && a.pue <= 3.0)) throw InputError("--pue must be between 1.0 and 3.0");
  Energy e;
  e.kwh = gpu_hours * tdp_watts * a.power_utilization * a.pue / 1000.0;
  if (a.grid_kg_per_kwh) e.co2_kg = e.kwh * *a.grid_kg_per_kwh;
  return e;
}

}  // namespace gpuplan
