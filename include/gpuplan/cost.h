// Cost and energy of a run: USD from GPU-hours × price, kWh from power × time × PUE, CO2 from grid intensity.
#pragma once
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "catalog.h"
#include "compute.h"
#include "units.h"

namespace gpuplan {

struct PricedOffering {
  const Offering* offering = nullptr;  // nullptr: a price the user gave
  UsdPerHour per_gpu_hour{0};
  bool spot = false;
  Usd total{0};
};

// Every offering of the device with a price of the requested kind (spot only where published), cheapest first.
inline std::vector<PricedOffering> price_run(const Catalog& cat, const Device& device, double gpu_hours, bool spot,
                                             const std::string& provider = "") {
  std::vector<PricedOffering> out;
  for (const auto& f : cat.offerings) {
    // An offering this device is not named by is another device's; one it is named by is its own unless an
    // earlier device answers to the same name (the catalog's first match wins).
    if (!device.named(f.accelerator) || cat.find(f.accelerator) != &device) continue;
    if (!provider.empty() && f.provider != provider) continue;
    const auto& price = spot ? f.spot : f.on_demand;
    if (!price) continue;
    PricedOffering p;
    p.offering = &f;
    p.spot = spot;
    p.per_gpu_hour = UsdPerHour(price->in(unit::usd_per_hour) / f.count);
    p.total = Seconds(gpu_hours * 3600.0) * p.per_gpu_hour;
    out.push_back(p);
  }
  std::sort(out.begin(), out.end(), [](const PricedOffering& a, const PricedOffering& b) { return a.total < b.total; });
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
