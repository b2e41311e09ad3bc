// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp), to replay a step's
// allocations and see how much it reserves beyond the live tensors: freed blocks stay cached in their segments,
// a request takes the smallest cached block that fits (splitting it), and only when none fits does the allocator
// add a segment. Fragmentation is what that policy leaves unusable. Blocks belong to the CUDA stream that
// allocated them and are only reused by requests on that stream (FSDP2 all-gathers and reduce-scatters on streams
// of their own: measured on 2 × H200, their blocks sit in separate pools beside the default stream's).
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

namespace gpuplan {

class CachingAllocatorModel {
 public:
  using Handle = std::uint32_t;  // a block's index (a step's requests are bounded far below 2^31)

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
  // What it holds beyond the live tensors: its peak reserve minus its peak of live bytes (rounding and
  // fragmentation).
  double reserve() const { return std::max(0.0, peak_reserved() - peak_allocated()); }
  static constexpr Handle none = ~Handle(0);

 private:
  struct Block {  // 24 bytes: a replay keeps tens of thousands
    std::uint64_t size = 0;
    Handle prev = none, next = none;
    int stream = 0;
    bool small = false;
    bool free = true;
    bool listed = false;  // in its pool's free lists (a free block being merged is briefly not)
  };

  // Free blocks by pool (small or large, stream) and size, each size with a min-heap of blocks: PyTorch's
  // BlockComparator orders a pool by (stream, size, address), and a request takes the first block at or above its
  // size. A step has thousands of free blocks but only a few hundred distinct sizes at a time (Llama 3.1 70B under
  // ZeRO-3: at most 372), and splits keep making new ones (a third of the insertions). So a pool files its sizes
  // by class — a size's octave cut in 16, as in TLSF (Masmano et al., ECRTS 2004) — each class a short sorted
  // array, with a bitmap of the classes that hold any: a request looks in its own class, then jumps to the next
  // class that holds a size. The lowest handle stands for the lowest address. Entries are removed lazily: one whose
  // block is no longer listed at that size is skipped when it reaches its heap's top, and a size whose heap runs
  // empty is dropped, so each stale entry is passed once.
  using Heap = std::vector<Handle>;  // std::greater: the smallest handle on top
  struct Size {
    std::uint64_t size;
    std::uint32_t heap;  // index into heaps_
    bool operator<(std::uint64_t s) const { return size < s; }
  };
  // Sizes in units of 512 B (kMinBlockSize), below 2^51 of them (round_size clamps at 2^60 B): the 2^5 smallest
  // have a class each, then each octave [2^k, 2^(k+1)) is cut in 2^4 by the 4 bits after its leading one (16 per
  // octave keeps a class to a handful of sizes; TLSF uses the same split).
  static constexpr int kLinearBits = 5, kSubBits = 4, kTopOctave = 50;
  static constexpr int kLinear = 1 << kLinearBits, kPerOctave = 1 << kSubBits;
  static constexpr int kClasses = kLinear + (kTopOctave - kLinearBits + 1) * kPerOctave;
  static int size_class(std::uint64_t size) {
    const std::uint64_t u = size / kMinBlockSize;
    if (u < kLinear) return int(u);
    const int octave = 63 - std::countl_zero(u);  // ≥ kLinearBits
    return kLinear + (octave - kLinearBits) * kPerOctave + int((u >> (octave - kSubBits)) & (kPerOctave - 1));
  }
  struct Pool {
    std::vector<std::vector<Size>> classes;  // kClasses, allocated at the pool's first free block
    std::uint64_t filled[(kClasses + 63) / 64] = {};
    // The first class at or after c that holds a size, or kClasses.
    int next(int c) const {
      for (int w = c / 64; w < (kClasses + 63) / 64; ++w) {
        const std::uint64_t m = filled[w] & (w == c / 64 ? ~std::uint64_t(0) << (c % 64) : ~std::uint64_t(0));
        if (m) return w * 64 + std::countr_zero(m);
      }
      return kClasses;
    }
    void mark(int c, bool on) {
      if (on) filled[c / 64] |= std::uint64_t(1) << (c % 64);
      else filled[c / 64] &= ~(std::uint64_t(1) << (c % 64));
    }
  };
  static constexpr std::size_t kStreams = 8;  // streams modelled: FSDP2's use 0 and 1
  Pool& pool(bool small, int stream) {
    Pool& p = pools_[std::size_t(small) * kStreams + std::size_t(stream) % kStreams];
    if (p.classes.empty()) p.classes.resize(kClasses);
    return p;
  }

  Handle take_free(bool small, int stream, std::uint64_t size) {
    Pool& p = pool(small, stream);
    int c = size_class(size);
    if (c < kClasses && p.classes[c].empty()) c = p.next(c);
    bool first = true;
    while (c < kClasses) {
      std::vector<Size>& sizes = p.classes[c];
      auto it = first ? std::lower_bound(sizes.begin(), sizes.end(), size) : sizes.begin();
      first = false;
      while (it != sizes.end()) {
        Heap& h = heaps_[it->heap];
        Handle found = none;
        while (!h.empty() && found == none) {
          const Handle b = h.front();
          std::pop_heap(h.begin(), h.end(), std::greater<>());
          h.pop_back();
          if (blocks_[b].listed && blocks_[b].size == it->size) found = b;
        }
        if (h.empty()) {
          idle_heaps_.push_back(it->heap);
          it = sizes.erase(it);
        } else if (found == none) {
          ++it;
        }
        if (found != none) {
          if (sizes.empty()) p.mark(c, false);
          blocks_[found].listed = false;
          return found;
        }
      }
      if (sizes.empty()) p.mark(c, false);
      c = p.next(c + 1);
    }
    return none;
  }
  void insert_free(Handle b) {
    Block& blk = blocks_[b];
    blk.listed = true;
    Pool& p = pool(blk.small, blk.stream);
    const int c = size_class(blk.size);
    std::vector<Size>& sizes = p.classes[c];
    auto it = std::lower_bound(sizes.begin(), sizes.end(), blk.size);
    if (it == sizes.end() || it->size != blk.size) {
      std::uint32_t heap;
      if (idle_heaps_.empty()) {
        heap = std::uint32_t(heaps_.size());
        heaps_.emplace_back();
      } else {
        heap = idle_heaps_.back();
        idle_heaps_.pop_back();
      }
      it = sizes.insert(it, Size{blk.size, heap});
      p.mark(c, true);
    }
    Heap& h = heaps_[it->heap];
    h.push_back(b);
    std::push_heap(h.begin(), h.end(), std::greater<>());
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
    return Handle(blocks_.size() - 1);
  }
  void erase_free(Handle b) { blocks_[b].listed = false; }

  std::vector<Block> blocks_;
  Pool pools_[2 * kStreams];               // by (small, stream)
  std::vector<Heap> heaps_;                // their heaps, by Size::heap
  std::vector<std::uint32_t> idle_heaps_;  // heaps no key uses now, their storage kept
  std::uint64_t reserved_ = 0, allocated_ = 0, peak_reserved_ = 0, peak_allocated_ = 0;
};

// What a step asks of the caching allocator, as data: allocations and frees in the order the framework makes them,
// each tagged with its phase: what the builders (training/allocations.h, inference.h) write for tests and
// inspection, folded by replay_reserve.
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

// The same requests fed straight to the allocator model, for an estimate: nothing is recorded, so a step's tens of
// thousands of requests keep no timeline in memory (touching its pages was most of a large model's estimate). The
// builders (training/allocations.h, inference.h) write to either.
class ReplayedAllocations {
 public:
  using Id = AllocationTimeline::Id;
  static_assert(std::is_same_v<Id, CachingAllocatorModel::Handle> && AllocationTimeline::none == CachingAllocatorModel::none);
  AllocationTimeline::Phase phase = AllocationTimeline::Phase::setup;  // unused: the reserve has no phases

  Id malloc(double bytes, int stream = 0) { return model_.malloc(bytes, stream); }
  void free(Id id) { model_.free(id); }
  double reserve() const { return model_.reserve(); }

 private:
  CachingAllocatorModel model_;
};

// The allocator's reserve after replaying a recorded timeline.
inline double replay_reserve(const AllocationTimeline& t) {
  ReplayedAllocations A;
  std::vector<AllocationTimeline::Id> handle(t.allocations, AllocationTimeline::none);
  for (const auto& e : t.events) {
    if (e.alloc) handle[e.id] = A.malloc(e.bytes, e.stream);
    else A.free(handle[e.id]);
  }
  return A.reserve();
}

}  // namespace gpuplan
