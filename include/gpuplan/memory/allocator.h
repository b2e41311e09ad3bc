// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp), to replay a step's
// allocations and see how much it reserves beyond the live tensors: freed blocks stay cached in their segments,
// a request takes the smallest cached block that fits (splitting it), and only when none fits does the allocator
// add a segment. Fragmentation is what that policy leaves unusable. Blocks belong to the CUDA stream that
// allocated them and are only reused by requests on that stream (FSDP2 all-gathers and reduce-scatters on streams
// of their own: measured on 2 × H200, their blocks sit in separate pools beside the default stream's).
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

namespace gpuplan {

class CachingAllocatorModel {
 public:
  using Handle = std::size_t;

  // Constants of CUDACachingAllocator.cpp (PyTorch 2.x).
  static constexpr std::uint64_t kMinBlockSize = 512;             // all sizes are rounded to 512 B
  static constexpr std::uint64_t kSmallSize = 1 << 20;            // ≤ 1 MiB: small pool
  static constexpr std::uint64_t kSmallBuffer = 2 << 20;          // small pool segments are 2 MiB
  static constexpr std::uint64_t kMinLargeAlloc = 10 << 20;       // 1–10 MiB requests get 20 MiB segments
  static constexpr std::uint64_t kLargeBuffer = 20 << 20;
  static constexpr std::uint64_t kRoundLarge = 2 << 20;           // larger segments are rounded to 2 MiB

  Handle malloc(double bytes, int stream = 0) {
    if (bytes <= 0) return none;  // nothing to allocate (a tensor this rank does not hold)
    const std::uint64_t size = round_size(bytes);
    const bool small = size <= kSmallSize;
    Handle b = take_free(small, stream, size);
    if (b == none) {
      const std::uint64_t seg = small ? kSmallBuffer : size < kMinLargeAlloc ? kLargeBuffer : round_up(size, kRoundLarge);
      b = new_block(seg, small, stream);
      reserved_ += seg;
    }
    // Split when the remainder is worth keeping (CUDACachingAllocator::should_split).
    const std::uint64_t rest = blocks_[b].size - size;
    if ((small && rest >= kMinBlockSize) || (!small && rest > kSmallSize)) {
      const Handle r = new_block(rest, small, blocks_[b].stream);
      blocks_[r].prev = b;
      blocks_[r].next = blocks_[b].next;
      if (blocks_[b].next != none) blocks_[blocks_[b].next].prev = r;
      blocks_[b].next = r;
      blocks_[b].size = size;
      insert_free(r);
    }
    blocks_[b].free = false;
    allocated_ += blocks_[b].size;
    peak_reserved_ = std::max(peak_reserved_, reserved_);
    peak_allocated_ = std::max(peak_allocated_, allocated_);
    return b;
  }

  void free(Handle b) {
    if (b == none || blocks_[b].free) return;
    allocated_ -= blocks_[b].size;
    blocks_[b].free = true;
    // Merge with free neighbours in the same segment.
    for (Handle n : {blocks_[b].prev, blocks_[b].next}) {
      if (n == none || !blocks_[n].free) continue;
      erase_free(n);
      const Handle lo = blocks_[n].next == b ? n : b;
      const Handle hi = lo == n ? b : n;
      blocks_[lo].size += blocks_[hi].size;
      blocks_[lo].next = blocks_[hi].next;
      if (blocks_[hi].next != none) blocks_[blocks_[hi].next].prev = lo;
      blocks_[hi].size = 0;
      b = lo;
    }
    insert_free(b);
  }

  double peak_reserved() const { return double(peak_reserved_); }
  double peak_allocated() const { return double(peak_allocated_); }
  static constexpr Handle none = ~Handle(0);

 private:
  struct Block {
    std::uint64_t size = 0;
    bool small = false;
    int stream = 0;
    bool free = true;
    bool listed = false;  // in its pool's free lists (a free block being merged is briefly not)
    Handle prev = none, next = none;
  };

  // Free blocks by (pool, stream, size), each size with a min-heap of blocks: PyTorch's BlockComparator orders a
  // pool by (stream, size, address), and a request takes the first block at or above its size. A step has
  // thousands of free blocks but a few dozen distinct sizes (Llama 3.1 405B: 2,589 and 24), so the search passes
  // few sizes and a heap gives the lowest block of one (the lowest handle stands for the lowest address). Entries
  // are removed lazily: one whose block is no longer listed at that size is skipped when it reaches the top, and a
  // size whose heap runs empty is dropped, so each stale entry is passed once. (A tree over sizes, not a sorted
  // vector: extreme shapes reach tens of thousands of sizes.)
  using SizeKey = std::tuple<bool, int, std::uint64_t>;  // (small pool, stream, size)
  using Heap = std::vector<Handle>;                      // std::greater: the smallest handle on top

  Handle take_free(bool small, int stream, std::uint64_t size) {
    auto it = free_.lower_bound({small, stream, size});
    while (it != free_.end() && std::get<0>(it->first) == small && std::get<1>(it->first) == stream) {
      Heap& h = it->second;
      while (!h.empty()) {
        const Handle b = h.front();
        std::pop_heap(h.begin(), h.end(), std::greater<>());
        h.pop_back();
        if (blocks_[b].listed && blocks_[b].size == std::get<2>(it->first)) {
          blocks_[b].listed = false;
          if (h.empty()) free_.erase(it);
          return b;
        }
      }
      it = free_.erase(it);
    }
    return none;
  }

  static std::uint64_t round_up(std::uint64_t v, std::uint64_t m) { return (v + m - 1) / m * m; }
  static std::uint64_t round_size(double bytes) {
    // Requests beyond 2^60 B (an exabyte) are clamped: no device has them, and the sizes must stay exact integers.
    const double clamped = bytes > 1.15e18 ? 1.15e18 : bytes;
    const auto b = clamped <= 0 ? std::uint64_t(1) : std::uint64_t(clamped + 0.5);
    return b < kMinBlockSize ? kMinBlockSize : round_up(b, kMinBlockSize);
  }
  Handle new_block(std::uint64_t size, bool small, int stream) {
    Block blk;
    blk.size = size;
    blk.small = small;
    blk.stream = stream;
    blocks_.push_back(blk);
    return blocks_.size() - 1;
  }
  void insert_free(Handle b) {
    Block& blk = blocks_[b];
    blk.listed = true;
    Heap& h = free_[{blk.small, blk.stream, blk.size}];
    h.push_back(b);
    std::push_heap(h.begin(), h.end(), std::greater<>());
  }
  void erase_free(Handle b) { blocks_[b].listed = false; }

  std::vector<Block> blocks_;
  std::map<SizeKey, Heap> free_;
  std::uint64_t reserved_ = 0, allocated_ = 0, peak_reserved_ = 0, peak_allocated_ = 0;
};

// What a step asks of the caching allocator, as data: allocations and frees in the order the framework makes them,
// each tagged with its phase. Built by the estimators (training/allocations.h), folded by replay_reserve.
struct AllocationTimeline {
  using Id = std::uint32_t;  // the n-th allocation
  static constexpr Id none = ~Id(0);
  enum class Phase : std::uint8_t { setup, forward, backward, optimizer };
  struct Event {
    double bytes;  // requested (allocations only)
    Id id;
    int stream;    // CUDA stream whose pool serves it
    bool alloc;    // an allocation, else the free of allocation `id`
    Phase phase;
  };
  std::vector<Event> events;
  Phase phase = Phase::setup;  // the phase new events are tagged with
  Id allocations = 0;

  Id malloc(double bytes, int stream = 0) {
    if (bytes <= 0) return none;  // nothing to allocate (a tensor this rank does not hold)
    events.push_back({bytes, allocations, stream, true, phase});
    return allocations++;
  }
  void free(Id id) {
    if (id != none) events.push_back({0.0, id, 0, false, phase});
  }
};

// What the caching allocator holds beyond the live tensors after replaying a timeline: its peak reserve minus its
// peak of live bytes (rounding and fragmentation).
inline double replay_reserve(const AllocationTimeline& t) {
  CachingAllocatorModel A;
  std::vector<CachingAllocatorModel::Handle> handle(t.allocations, CachingAllocatorModel::none);
  for (const auto& e : t.events) {
    if (e.alloc) handle[e.id] = A.malloc(e.bytes, e.stream);
    else A.free(handle[e.id]);
  }
  return std::max(0.0, A.peak_reserved() - A.peak_allocated());
}

}  // namespace gpuplan
