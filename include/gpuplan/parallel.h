// Data-parallel communication per optimizer step: what each GPU sends in its collectives, and how long that takes
// on the link between the GPUs (NVLink inside a node, the network between nodes).
#pragma once
#include <optional>
#include <string>

#include "hardware.h"
#include "memory/workload.h"
#include "model.h"
#include "units.h"

namespace gpuplan {

struct Communication {
  std::string collectives;       // which collectives, in words
  Bytes bytes_per_gpu{0};        // sent (= received) per GPU per step
  std::optional<Seconds> time;   // at the link's one-way bandwidth, without overlap
  std::optional<ByteRate> bandwidth;
  std::string link;
};

// Ring collectives move (N−1)/N of the buffer per GPU for a reduce-scatter or an all-gather, twice that for an
// all-reduce (Patarasuk & Yuan 2009). DDP all-reduces the gradients; ZeRO-1/2 reduce-scatter the gradients and
// all-gather the updated parameters (the same volume); ZeRO-3 also all-gathers the parameters in forward and again
// in backward: 1.5× (ZeRO paper §7).
inline Communication data_parallel_communication(const TrainingWorkload& w, double trainable_params,
                                                 double param_bytes, double grad_bytes) {
  Communication c;
  if (w.gpus <= 1) {
    c.collectives = "none (one GPU)";
    return c;
  }
  const double n = double(w.gpus), ring = (n - 1) / n;
  const double grads = trainable_params * grad_bytes, params = trainable_params * param_bytes;
  switch (w.zero) {
    case 0:
      c.collectives = "all-reduce of the gradients";
      c.bytes_per_gpu = Bytes(2 * ring * grads);
      break;
    case 1:
    case 2:
      c.collectives = "reduce-scatter of the gradients, all-gather of the updated parameters";
      c.bytes_per_gpu = Bytes(ring * (grads + params));
      break;
    default:
      c.collectives = "all-gather of the parameters in forward and in backward, reduce-scatter of the gradients";
      c.bytes_per_gpu = Bytes(ring * (2 * params + grads));
      break;
  }
  return c;
}

// Per GPU, one way: NVLink figures in the catalog are bidirectional (NVLink 4: 900 GB/s = 450 each way). Across
// nodes the network limits: network_bandwidth per GPU (default 50 GB/s: one 400 Gb/s NIC per GPU, as in DGX H100).
inline void time_communication(Communication& c, const Device& d, std::int64_t nodes,
                               std::optional<ByteRate> network_bandwidth) {
  if (c.bytes_per_gpu.in(unit::bytes) <= 0) return;
  const ByteRate network = network_bandwidth.value_or(ByteRate(50e9));
  std::optional<ByteRate> nvlink;
  if (d.interconnect_bandwidth) nvlink = ByteRate(d.interconnect_bandwidth->in(unit::bytes_per_s) / 2);
  if (nodes > 1 || !nvlink) {
    c.bandwidth = nodes > 1 ? network : ByteRate(std::min(network.in(unit::bytes_per_s), 32e9));
    c.link = nodes > 1 ? "network between nodes" : "PCIe (no GPU interconnect in the catalog; 32 GB/s, PCIe 5 x16)";
  } else {
    c.bandwidth = nvlink;
    c.link = d.interconnect + " (one way)";
  }
  c.time = c.bytes_per_gpu / *c.bandwidth;
}

}  // namespace gpuplan
