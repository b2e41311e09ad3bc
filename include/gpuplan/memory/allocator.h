// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp), to replay a step's
// allocations and see how much it reserves beyond the live tensors: freed blocks stay cached in their segments,
// a request takes the smallest cached block that fits (splitting it), and only when none fits does the allocator
// add a segment. Fragmentation is what that policy leaves unusable. Blocks belong to the CUDA stream that
// allocated them and are only reused by requests on that stream (FSDP2 all-gathers and reduce-scatters on streams
// of their own: measured on 2 × H200, their blocks sit in separate pools beside the default stream's). Among free
// blocks of one size the lowest address goes first, so where blocks lie decides between them (Placement).
#pragma once
#include <algorithm>
#include <bit>
#include <cstdint>
#include <iterator>
#include <type_traits>
#include <vector>

namespace gpuplan {

namespace detail {

// An array with room kept at both ends (as boost::container::devector): inserting or erasing at either end moves
// no other element; inside, the shorter side moves.
template <class T>
class Devector {
 public:
  Devector() = default;
  // A copy holds the elements only, not the room (HF generate's replay copies its model after prefill, and room
  // copied would be allocated for nothing).
  Devector(const Devector& o)
      : buf_(o.buf_.begin() + std::ptrdiff_t(o.head_), o.buf_.begin() + std::ptrdiff_t(o.tail_)), tail_(buf_.size()) {}
  Devector& operator=(const Devector& o) {
    if (this != &o) {
      buf_.assign(o.buf_.begin() + std::ptrdiff_t(o.head_), o.buf_.begin() + std::ptrdiff_t(o.tail_));
      head_ = 0;
      tail_ = buf_.size();
    }
    return *this;
  }
  Devector(Devector&&) = default;
  Devector& operator=(Devector&&) = default;

  T* begin() { return buf_.data() + head_; }
  T* end() { return buf_.data() + tail_; }
  bool empty() const { return head_ == tail_; }
  std::size_t size() const { return tail_ - head_; }
  std::size_t capacity() const { return buf_.size(); }  // under 8 × the most elements it has held + 16
  T& front() { return buf_[head_]; }
  T& back() { return buf_[tail_ - 1]; }
  void clear() { head_ = tail_ = buf_.size() / 2; }
  void push_back(const T& e) {
    if (tail_ == buf_.size()) recentre();
    buf_[tail_++] = e;
  }
  void insert(T* at, const T& e) {
    if (at == end()) return push_back(e);
    const std::size_t i = std::size_t(at - begin()), n = tail_ - head_;
    const bool front_side = i < n - i;  // the elements before `at` move, else those after it
    if (front_side ? head_ == 0 : tail_ == buf_.size()) recentre();
    at = begin() + i;
    if (front_side) {
      std::move(begin(), at, begin() - 1);
      --head_;
      *(at - 1) = e;
    } else {
      std::move_backward(at, end(), end() + 1);
      ++tail_;
      *at = e;
    }
  }
  void erase(T* at) {
    if (at + 1 == end()) {
      --tail_;
    } else if (at - begin() < end() - at) {
      std::move_backward(begin(), at, at + 1);
      ++head_;
    } else {
      std::move(at + 1, end(), at);
      --tail_;
    }
    if (empty()) clear();
  }
  template <class Pred>
  void erase_if(Pred p) {
    tail_ = std::size_t(std::remove_if(begin(), end(), p) - buf_.data());
    if (empty()) clear();
  }

 private:
  // The elements to the middle of a buffer at least 4 times their number (amortized O(1) an insert).
  void recentre() {
    const std::size_t n = tail_ - head_;
    if (4 * n + 8 > buf_.size()) {
      std::vector<T> wider(std::max(4 * n + 8, 2 * buf_.size()));
      const std::size_t h = (wider.size() - n) / 2;
      std::copy(begin(), end(), wider.begin() + std::ptrdiff_t(h));
      buf_.swap(wider);
      head_ = h;
    } else {
      const std::size_t h = (buf_.size() - n) / 2;
      if (h < head_) std::copy(begin(), end(), buf_.data() + h);
      else std::copy_backward(begin(), end(), buf_.data() + h + n);
      head_ = h;
    }
    tail_ = head_ + n;
  }

  std::vector<T> buf_;  // the elements are buf_[head_, tail_), with room on either side
  std::size_t head_ = 0, tail_ = 0;
};

}  // namespace detail

// Where the model places blocks, i.e. which of several free blocks of one size a request takes (CUDACachingAllocator's
// BlockComparatorSize: the lowest address).
enum class Placement : std::uint8_t {
  // As the driver places them: cudaMalloc hands each new segment out below every segment before it (of the 379 large
  // segments the 21 recorded traces add, tests/data/calibration/traces, PyTorch 2.11 / CUDA 13.0 on an H200, 372 lie
  // below all earlier ones), and a split's remainder lies right after the part taken (CUDACachingAllocator's
  // alloc_found_block: remaining->ptr = block->ptr + size). Replaying the recorded traces this way, every one agrees
  // exactly (tests/allocator/replay_traces.py).
  driver,
  // Blocks ranked by when the model made them (segments as allocated, then each split's remainder): the estimators'
  // timelines (inference.h, training/allocations.h) are fitted to it. Their requests are coarser than the real
  // sequence (a layer's weights one block, prefill tensors merged), and under driver placement their measured sets
  // move both ways, several past their ratchets (measured_g2's worst 6.7 → 22.5 %, measured_g1's 10.9 → 17.0 %,
  // measured_m1's p90 5.7 → 3.9 %): they keep this order until their timelines follow the traces.
  made,
};

class CachingAllocatorModel {
 public:
  using Handle = std::uint32_t;  // a block's slot (a step's requests are bounded far below 2^31)

  // Constants of CUDACachingAllocator.cpp (PyTorch 2.x).
  static constexpr std::uint64_t kMinBlockSize = 512;             // all sizes are rounded to 512 B
  static constexpr std::uint64_t kSmallSize = 1 << 20;            // ≤ 1 MiB: small pool
  static constexpr std::uint64_t kSmallBuffer = 2 << 20;          // small pool segments are 2 MiB
  static constexpr std::uint64_t kMinLargeAlloc = 10 << 20;       // 1–10 MiB requests get 20 MiB segments
  static constexpr std::uint64_t kLargeBuffer = 20 << 20;
  static constexpr std::uint64_t kRoundLarge = 2 << 20;           // larger segments are rounded to 2 MiB

  // A model takes over the storage the last one on its thread left, emptied, and leaves its own when it ends: a
  // process replays many steps (the fit table, the planner), and its fresh pages cost more than the replay's work
  // (7–11 µs a page on the VM we measure on), so only the largest replay touches new ones.
  explicit CachingAllocatorModel(Placement placement = Placement::made) : placement_(placement) {
    Storage& s = spare();
    blocks_.swap(s.blocks);
    dead_.swap(s.dead);
    for (std::size_t i = 0; i < std::size(pools_); ++i) pools_[i].classes.swap(s.classes[i]);
  }
  ~CachingAllocatorModel() {
    Storage& s = spare();
    if (s.blocks.capacity() > 0) return;  // another model's storage is there already
    blocks_.clear();
    dead_.clear();
    blocks_.swap(s.blocks);
    dead_.swap(s.dead);
    for (std::size_t i = 0; i < std::size(pools_); ++i) {
      pools_[i].clear();
      pools_[i].classes.swap(s.classes[i]);
    }
  }
  CachingAllocatorModel(const CachingAllocatorModel&) = default;
  CachingAllocatorModel(CachingAllocatorModel&&) = default;
  CachingAllocatorModel& operator=(const CachingAllocatorModel&) = default;
  CachingAllocatorModel& operator=(CachingAllocatorModel&&) = default;

  Handle malloc(double bytes, int stream = 0) {
    if (bytes <= 0) return none;  // nothing to allocate (a tensor this rank does not hold)
    const std::uint64_t size = round_size(bytes);
    const bool small = size <= kSmallSize;
    const std::uint8_t pool = std::uint8_t(std::size_t(small) * kStreams + std::size_t(stream) % kStreams);
    Handle b = take_free(pool, size);
    if (b == none) {
      const std::uint64_t seg = small ? kSmallBuffer : size < kMinLargeAlloc ? kLargeBuffer : round_up(size, kRoundLarge);
      if (reserved_ + seg > capacity_) {
        // cudaMalloc fails: free every cached segment that holds no tensor and try again
        // (CUDACachingAllocator's release_cached_blocks); still too much is an out-of-memory error (the replay goes on).
        release_cached();
        out_of_memory_ = out_of_memory_ || reserved_ + seg > capacity_;
      }
      if (placement_ == Placement::driver) lowest_ -= seg / kMinBlockSize;  // below every earlier segment
      b = new_block(seg, pool, placement_ == Placement::driver ? lowest_ : made_);
      reserved_ += seg;
      if (batch_) carved_.push_back({b, seg, none});
    } else if (batch_ && blocks_[b].order < batch_since_) {
      carved_.push_back({b, blocks_[b].size, blocks_[b].next});
    }
    // Split when the remainder is worth keeping (CUDACachingAllocator::should_split).
    const std::uint64_t rest = blocks_[b].size - size;
    if ((small && rest >= kMinBlockSize) || (!small && rest > kSmallSize)) {
      const Handle r = new_block(rest, pool, placement_ == Placement::driver ? blocks_[b].addr + size / kMinBlockSize : made_);
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

  // Each handle is freed once: a freed block's slot may already hold another block.
  void free(Handle b) {
    if (b == none) return;  // nothing was allocated
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
      dead_.push_back(hi);
      b = lo;
    }
    insert_free(b);
  }

  // A batch: requests, then the free of every block they made, with nothing between (an optimizer step's
  // temporaries). Freeing them one by one leaves each free block they were carved from whole again, merged back to
  // its old extent (its neighbours were in use, or it would have merged with them), and each segment they added as
  // one free block: free_batch puts those back directly, one free-list insert per block carved from instead of a
  // merge per request.
  void begin_batch() {
    batch_ = true;
    batch_since_ = made_;
    carved_.clear();
  }
  void free_batch() {
    for (const Carved& c : carved_) {
      std::uint64_t freed = blocks_[c.block].size;  // the first request's part keeps the block's slot
      for (Handle b = blocks_[c.block].next; b != c.next;) {
        const Handle after = blocks_[b].next;
        if (blocks_[b].free) erase_free(b);
        else freed += blocks_[b].size;
        dead_.push_back(b);
        b = after;
      }
      allocated_ -= freed;
      Block& whole = blocks_[c.block];
      whole.size = c.size;
      whole.next = c.next;
      whole.free = true;
      if (c.next != none) blocks_[c.next].prev = c.block;
      insert_free(c.block);
    }
    carved_.clear();
    batch_ = false;
  }

  // The most it may reserve (the GPU's memory beyond the CUDA context); unbounded unless set.
  void set_capacity(double bytes) { capacity_ = bytes >= 1.15e18 ? ~std::uint64_t(0) : std::uint64_t(std::max(0.0, bytes)); }
  bool out_of_memory() const { return out_of_memory_; }
  int releases() const { return releases_; }  // times it freed its cached segments to make room

  double reserved() const { return double(reserved_); }  // segments held now
  double peak_reserved() const { return double(peak_reserved_); }
  double peak_allocated() const { return double(peak_allocated_); }
  // What it holds beyond the live tensors: its peak reserve minus its peak of live bytes (rounding and
  // fragmentation).
  double reserve() const { return std::max(0.0, peak_reserved() - peak_allocated()); }
  static constexpr Handle none = ~Handle(0);
  // A block's number: blocks are numbered as they are made (segments in the order they are allocated, then each
  // split's remainder), and a merged block keeps the lower one's.
  std::uint32_t order(Handle b) const { return blocks_[b].order; }
  // Its place in address order (Placement): under driver placement its address in units of 512 B (kMinBlockSize),
  // counted down from 2^64 units; else its number when made.
  std::uint64_t address(Handle b) const { return blocks_[b].addr; }

 private:
  struct Block {  // 32 bytes
    std::uint64_t size = 0;
    std::uint64_t addr = 0;  // address()
    Handle prev = none, next = none;
    std::uint32_t order = 0;  // order(): made before a batch or in it
    std::uint16_t size_class = 0;  // while free: the class it is filed in
    std::uint8_t pool = 0;         // pools_ index: (small, stream)
    bool free = true;
  };

  // Free blocks by pool (small or large, stream), ordered as PyTorch's BlockComparator orders a pool — by (stream,
  // size, address) — and a request takes the first block at or above its size. A step has thousands of free blocks,
  // and splits keep making new sizes, so a pool files its blocks by size class — a size's octave cut in 16, as in
  // TLSF (Masmano et al., ECRTS 2004) — each class an array of (size, address, block) kept sorted, with a bitmap of
  // the classes that hold any: a request looks in its own class, then jumps to the next class that holds a block.
  // A class is sorted from the last block to be taken to the first, so that
  // taking one — often one of many equal sizes, e.g. a layer's tensor freed in every layer — removes it from the
  // end, not the front.
  struct Entry {
    std::uint64_t size;
    std::uint64_t addr;
    Handle block;
    // Taken later: the larger size, then the higher address.
    static bool later(const Entry& a, const Entry& b) { return a.size > b.size || (a.size == b.size && a.addr > b.addr); }
  };
  // A class's entries: taken from the back, and a freed block goes to one end or the other nearly always (a 405B
  // training replay: to the front 6 times in 10, the back 4 in 10, inside a handful).
  using Class = detail::Devector<Entry>;
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
    std::vector<Class> classes;  // kClasses, allocated at the pool's first free block
    static constexpr int kWords = (kClasses + 63) / 64;
    static_assert(kWords <= 64);
    std::uint64_t filled[kWords] = {};
    std::uint64_t words = 0;  // bit w: filled[w] has a class set (next() skips the empty words at once)
    // The first class at or after c that holds a block, or kClasses.
    int next(int c) const {
      int w = c / 64;
      if (w >= kWords) return kClasses;
      if (const std::uint64_t m = filled[w] & (~std::uint64_t(0) << (c % 64))) return w * 64 + std::countr_zero(m);
      const std::uint64_t later = words & (~std::uint64_t(1) << w);  // the words after w
      if (later == 0) return kClasses;
      w = std::countr_zero(later);
      return w * 64 + std::countr_zero(filled[w]);
    }
    [[gnu::always_inline]] void mark(int c, bool on) {
      std::uint64_t& f = filled[c / 64];
      if (on) {
        f |= std::uint64_t(1) << (c % 64);
        words |= std::uint64_t(1) << (c / 64);
      } else {
        f &= ~(std::uint64_t(1) << (c % 64));
        if (f == 0) words &= ~(std::uint64_t(1) << (c / 64));
      }
    }
    void clear() {  // empties the classes that hold blocks, keeping their storage (none left once moved from)
      for (std::size_t w = 0; w < std::size(filled); ++w)
        for (; filled[w] != 0; filled[w] &= filled[w] - 1)
          if (!classes.empty()) classes[w * 64 + std::size_t(std::countr_zero(filled[w]))].clear();
      words = 0;
    }

    // A copy visits only the classes that hold blocks (a serving replay copies the model after prefill, when a few
    // dozen of a pool's 800 classes do).
    Pool() = default;
    Pool(const Pool& o) { *this = o; }
    Pool& operator=(const Pool& o) {
      if (this == &o) return *this;
      clear();
      if (!o.classes.empty()) classes.resize(kClasses);
      for (int w = 0; w < kWords; ++w)
        for (std::uint64_t bits = o.filled[w]; bits != 0; bits &= bits - 1) {
          const std::size_t c = std::size_t(w) * 64 + std::size_t(std::countr_zero(bits));
          classes[c] = o.classes[c];
        }
      std::copy(std::begin(o.filled), std::end(o.filled), filled);
      words = o.words;
      return *this;
    }
    Pool(Pool&&) = default;
    Pool& operator=(Pool&&) = default;
  };
  static constexpr std::size_t kStreams = 8;  // streams modelled: FSDP2's use 0 and 1

  // take_free, insert_free and erase_free are inlined into malloc and free: a replay calls them tens of thousands of
  // times, and the calls were 4–5 % of a 405B training estimate.
  [[gnu::always_inline]] Handle take_free(std::uint8_t pool, std::uint64_t size) {
    Pool& p = pools_[pool];
    if (p.classes.empty()) return none;  // the pool has never held a free block
    int c = size_class(size);
    Class* from = &p.classes[c];
    // The blocks at or above the size are a prefix of the class; the last of them is the one to take. Most often
    // that is every block of the class (7 in 8 of the requests a 405B training replay makes of a class holding
    // blocks), and no search is needed.
    Entry* it = !from->empty() && from->back().size >= size
                    ? from->end()
                    : std::partition_point(from->begin(), from->end(), [&](const Entry& e) { return e.size >= size; });
    if (it == from->begin()) {  // none here: the first block of the next class that has one
      c = p.next(c + 1);
      if (c >= kClasses) return none;
      from = &p.classes[c];
      it = from->end();
    }
    --it;
    const Handle b = it->block;
    from->erase(it);
    if (from->empty()) p.mark(c, false);
    return b;
  }
  [[gnu::always_inline]] void insert_free(Handle b) {
    Block& blk = blocks_[b];
    Pool& p = pools_[blk.pool];
    if (p.classes.empty()) p.classes.resize(kClasses);
    const int c = size_class(blk.size);
    blk.size_class = std::uint16_t(c);
    auto& v = p.classes[c];
    const Entry e{blk.size, blk.addr, b};
    if (v.empty()) {
      p.mark(c, true);
      return v.push_back(e);
    }
    // The ends first: a freed block nearly always goes to one of them.
    v.insert(!Entry::later(e, v.back())   ? v.end()
             : Entry::later(e, v.front()) ? v.begin()
                                          : near_back(v, [&](const Entry& x) { return Entry::later(e, x); }),
             e);
  }
  // The first entry of v for which `after` holds (it holds for a suffix). When not at an end, the place is nearly
  // always among the last few (a 405B training replay: 8 in 10 within 8 of the back, in runs of ~250 equal sizes),
  // so those are walked before searching the rest.
  template <class After>
  [[gnu::always_inline]] static Entry* near_back(Class& v, After after) {
    Entry* p = v.end();
    for (int k = 0; k < 8 && p != v.begin(); ++k, --p)
      if (!after(*(p - 1))) return p;
    return std::partition_point(v.begin(), p, [&](const Entry& x) { return !after(x); });
  }
  [[gnu::always_inline]] void erase_free(Handle b) {
    const Block& blk = blocks_[b];
    Pool& p = pools_[blk.pool];
    const int c = blk.size_class;
    auto& v = p.classes[c];
    const Entry e{blk.size, blk.addr, b};  // a merged neighbour: the class's last entry 6 times in 10 (405B training)
    v.erase(near_back(v, [&](const Entry& x) { return !Entry::later(x, e); }));
    if (v.empty()) p.mark(c, false);
  }

  // Frees the segments that are one free block (a cached segment no tensor uses), in every pool.
  void release_cached() {
    ++releases_;
    for (Pool& p : pools_)
      for (std::size_t w = 0; w < std::size(p.filled); ++w)
        for (std::uint64_t bits = p.filled[w]; bits != 0; bits &= bits - 1) {
          const int c = int(w * 64) + std::countr_zero(bits);
          auto& v = p.classes[std::size_t(c)];
          v.erase_if([&](const Entry& e) {
            const Block& blk = blocks_[e.block];
            if (blk.prev != none || blk.next != none) return false;
            reserved_ -= blk.size;
            dead_.push_back(e.block);
            return true;
          });
          if (v.empty()) p.mark(c, false);
        }
  }

  static std::uint64_t round_up(std::uint64_t v, std::uint64_t m) { return (v + m - 1) / m * m; }
  static std::uint64_t round_size(double bytes) {
    // Requests beyond 2^60 B (an exabyte) are clamped: no device has them, and the sizes must stay exact integers.
    const double clamped = bytes > 1.15e18 ? 1.15e18 : bytes;
    const auto b = clamped <= 0 ? std::uint64_t(1) : std::uint64_t(clamped + 0.5);
    return b < kMinBlockSize ? kMinBlockSize : round_up(b, kMinBlockSize);
  }
  // A block in a free slot: merged blocks leave theirs to reuse, so a replay keeps as many slots as it ever has
  // blocks at once rather than one per block it ever made (a 405B serving replay: ~600 against ~17,000; reusing
  // them took a fifth off that process's time, 286 fewer page faults).
  Handle new_block(std::uint64_t size, std::uint8_t pool, std::uint64_t addr) {
    Block blk;
    blk.size = size;
    blk.addr = addr;
    blk.order = made_++;
    blk.pool = pool;
    if (dead_.empty()) {
      blocks_.push_back(blk);
      return Handle(blocks_.size() - 1);
    }
    const Handle h = dead_.back();
    dead_.pop_back();
    blocks_[h] = blk;
    return h;
  }

  std::vector<Block> blocks_;
  std::vector<Handle> dead_;  // slots of merged blocks
  std::uint32_t made_ = 0;    // blocks made so far
  // The lowest segment's address (units of 512 B): segments up to 2^60 B each (round_size's clamp) wrap it only
  // after 8,192 of them, and then only the order of equal free blocks would suffer.
  std::uint64_t lowest_ = 0;
  Placement placement_;
  // In a batch: each block requests were carved from — a free block older than the batch, or a segment it added —
  // with the size and next neighbour it had then.
  struct Carved {
    Handle block;
    std::uint64_t size;
    Handle next;
  };
  std::vector<Carved> carved_;
  bool batch_ = false;
  std::uint32_t batch_since_ = 0;  // made_ when the batch began
  Pool pools_[2 * kStreams];  // by (small, stream)

  struct Storage {  // a model's vectors, between models
    std::vector<Block> blocks;
    std::vector<Handle> dead;
    std::vector<Class> classes[2 * kStreams];
  };
  static Storage& spare() {
    thread_local Storage s;
    return s;
  }
  std::uint64_t reserved_ = 0, allocated_ = 0, peak_reserved_ = 0, peak_allocated_ = 0;
  std::uint64_t capacity_ = ~std::uint64_t(0);
  bool out_of_memory_ = false;
  int releases_ = 0;
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
  // A batch (CachingAllocatorModel::begin_batch) is recorded as its requests and their frees in order.
  void begin_batch() {}
  void free_batch(const std::vector<Id>& ids) {
    for (Id id : ids) free(id);
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
  ReplayedAllocations() = default;
  explicit ReplayedAllocations(double capacity) { model_.set_capacity(capacity); }  // bytes it may reserve
  explicit ReplayedAllocations(Placement placement) : model_(placement) {}

  Id malloc(double bytes, int stream = 0) { return model_.malloc(bytes, stream); }
  void free(Id id) { model_.free(id); }
  // ids: every request since begin_batch(), and nothing else came since.
  void begin_batch() { model_.begin_batch(); }
  void free_batch(const std::vector<Id>&) { model_.free_batch(); }
  double reserve() const { return model_.reserve(); }
  double reserved() const { return model_.reserved(); }
  double peak_reserved() const { return model_.peak_reserved(); }
  double peak_allocated() const { return model_.peak_allocated(); }
  bool out_of_memory() const { return model_.out_of_memory(); }
  int releases() const { return model_.releases(); }

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
