// The caching-allocator model against CUDACachingAllocator's rules, on hand-worked sequences.
#include <catch2/catch.hpp>
#include <gpuplan/memory/allocator.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <vector>

using gpuplan::CachingAllocatorModel;

namespace {
constexpr double MiB = 1 << 20;
}

TEST_CASE("Devector: the same contents as a vector under random inserts and erases, in bounded room", "[allocator]") {
  std::mt19937_64 rng(20261126);
  gpuplan::detail::Devector<int> d;
  std::vector<int> v;
  std::size_t most = 0;
  for (int op = 0; op < 20000; ++op) {
    const auto r = rng() % 100;
    // Phases that grow, shrink and hold it steady, with either end favoured (a queue, as when freed blocks go to the
    // front and requests take from the back, runs through the room on one side and recentres in place).
    const bool grow = (op / 2000) % 3 == 0, shrink = (op / 2000) % 3 == 1;
    if (!v.empty() && (shrink ? r < 60 : grow ? r < 30 : r < 50)) {
      const std::size_t i = r % 3 == 0 ? v.size() - 1 : r % 3 == 1 ? 0 : rng() % v.size();
      d.erase(d.begin() + std::ptrdiff_t(i));
      v.erase(v.begin() + std::ptrdiff_t(i));
    } else {
      const std::size_t i = r % 3 == 0 ? 0 : r % 3 == 1 ? v.size() : rng() % (v.size() + 1);
      d.insert(d.begin() + std::ptrdiff_t(i), op);
      v.insert(v.begin() + std::ptrdiff_t(i), op);
    }
    if (op % 5000 == 4999) {  // drop the odd elements
      d.erase_if([](int x) { return x % 2 != 0; });
      std::erase_if(v, [](int x) { return x % 2 != 0; });
    }
    most = std::max(most, v.size());
    REQUIRE(d.size() == v.size());
    REQUIRE(std::equal(d.begin(), d.end(), v.begin(), v.end()));
    REQUIRE(d.capacity() < 8 * most + 16);  // it grows only when 4 × its elements + 8 exceed the buffer, at most 2×
  }
  // Queues of a few elements, 100,000 through each, one way and the other: the room runs out on one side again and
  // again, and the elements are moved back to the middle of the buffer it grew to once (4 × 4 elements + 8).
  for (const bool at_front : {true, false}) {
    gpuplan::detail::Devector<int> q;
    for (int x = 0; x < 100000; ++x) {
      q.insert(at_front ? q.begin() : q.end(), x);
      if (q.size() > 3) q.erase(at_front ? q.end() - 1 : q.begin());
      REQUIRE((at_front ? q.back() : q.front()) == std::max(0, x - 2));
      REQUIRE((at_front ? q.front() : q.back()) == x);
    }
    CHECK(q.capacity() <= 4 * 4 + 8);
    q.clear();
    CHECK(q.empty());
  }
}

TEST_CASE("CachingAllocatorModel: segment sizes by request size", "[allocator]") {
  CachingAllocatorModel a;
  a.malloc(100);  // ≤ 1 MiB: a 2 MiB small-pool segment
  CHECK(a.peak_reserved() == 2 * MiB);
  a.malloc(3 * MiB);  // 1–10 MiB: a 20 MiB segment
  CHECK(a.peak_reserved() == 22 * MiB);
  a.malloc(101 * MiB + 1);  // larger: rounded up to 2 MiB
  CHECK(a.peak_reserved() == 22 * MiB + 102 * MiB);
  // Sizes round to 512 B; a large block is split only when more than 1 MiB would remain, so the 101 MiB request
  // holds its whole 102 MiB segment (PyTorch counts the block's size as allocated).
  CHECK(a.peak_allocated() == 512 + 3 * MiB + 102 * MiB);
  CHECK(a.malloc(0) == CachingAllocatorModel::none);  // nothing to allocate
}

TEST_CASE("CachingAllocatorModel: freed blocks are reused best-fit and split", "[allocator]") {
  CachingAllocatorModel a;
  auto big = a.malloc(400 * MiB);
  auto mid = a.malloc(200 * MiB);
  a.free(big);
  a.free(mid);
  // 150 MiB fits both cached blocks; the smaller (200 MiB) is taken and split: no new segment.
  a.malloc(150 * MiB);
  CHECK(a.peak_reserved() == 600 * MiB);
  // 300 MiB fits only the 400 MiB block.
  a.malloc(300 * MiB);
  CHECK(a.peak_reserved() == 600 * MiB);
  // 120 MiB: the remainders are 50 MiB and 100 MiB, neither fits (blocks of different segments never merge).
  a.malloc(120 * MiB);
  CHECK(a.peak_reserved() == 720 * MiB);
}

TEST_CASE("CachingAllocatorModel: a stream reuses only its own blocks", "[allocator]") {
  CachingAllocatorModel a;
  a.free(a.malloc(256 * MiB, 0));
  a.malloc(256 * MiB, 1);  // the cached block is the default stream's: a new segment
  CHECK(a.peak_reserved() == 512 * MiB);
  a.malloc(256 * MiB, 0);  // the default stream finds its own block again
  CHECK(a.peak_reserved() == 512 * MiB);
}

TEST_CASE("CachingAllocatorModel: equal sizes go lowest block first; a merged block leaves its old size", "[allocator]") {
  CachingAllocatorModel a;
  const auto x = a.malloc(12 * MiB), y = a.malloc(12 * MiB), z = a.malloc(12 * MiB);  // three 12 MiB segments
  a.free(y);
  a.free(x);
  CHECK(a.malloc(12 * MiB) == x);  // both fit exactly: the lower block (address) first, as BlockComparator orders
  CHECK(a.peak_reserved() == 36 * MiB);
  a.free(z);

  CachingAllocatorModel b;
  const auto s = b.malloc(30 * MiB);  // one 30 MiB segment
  b.free(s);
  CHECK(b.malloc(10 * MiB) == s);  // split: s keeps 10 MiB, a 20 MiB remainder is free
  b.free(s);                       // merged back into one free 30 MiB block: nothing is free at 20 MiB any more
  CHECK(b.malloc(20 * MiB) == s);  // served from the 30 MiB block, not from the remainder that no longer exists
  CHECK(b.peak_reserved() == 30 * MiB);
  CHECK(b.malloc(10 * MiB) != s);  // the new 10 MiB remainder
  CHECK(b.peak_reserved() == 30 * MiB);
}

TEST_CASE("CachingAllocatorModel: driver placement puts each segment below the last, a split's rest after its part",
          "[allocator]") {
  using gpuplan::Placement;
  constexpr std::uint64_t top = 0;  // addresses count down from 2^64 units of 512 B (0 − n wraps to 2^64 − n)
  constexpr std::uint64_t seg12 = 12 * 2048;  // 12 MiB in units of 512 B
  CachingAllocatorModel a(Placement::driver);
  const auto x = a.malloc(12 * MiB), y = a.malloc(12 * MiB), z = a.malloc(12 * MiB);  // three 12 MiB segments
  CHECK(a.address(x) == top - seg12);
  CHECK(a.address(y) == top - 2 * seg12);  // cudaMalloc's next segment lies below the one before
  CHECK(a.address(z) == top - 3 * seg12);
  a.free(x);
  a.free(y);
  CHECK(a.malloc(12 * MiB) == y);  // both fit exactly: the lower address, the newer segment (BlockComparatorSize)
  CHECK(a.peak_reserved() == 36 * MiB);

  // A 30 MiB segment split at 10 MiB: the remainder starts 10 MiB above the part taken (alloc_found_block).
  CachingAllocatorModel b(Placement::driver);
  const auto s = b.malloc(30 * MiB);
  b.free(s);
  CHECK(b.malloc(10 * MiB) == s);
  const auto rest = b.malloc(20 * MiB);  // exactly the remainder: no new segment
  CHECK(b.peak_reserved() == 30 * MiB);
  CHECK(b.address(rest) == b.address(s) + 10 * 2048);

  // An older cached segment (a tied lm_head's freed weight) against a newer one of the same size: the driver takes
  // the newer's block, the order of making the older's.
  for (const Placement p : {Placement::driver, Placement::made}) {
    CachingAllocatorModel c(p);
    const auto older = c.malloc(100 * MiB), newer = c.malloc(100 * MiB);
    c.free(older);
    c.free(newer);
    CHECK(c.malloc(60 * MiB) == (p == Placement::driver ? newer : older));
    CHECK(c.peak_reserved() == 200 * MiB);
  }
}

namespace {
// CUDACachingAllocator's rules written the slow, obvious way: every free block scanned for the smallest (size,
// address) that fits, segments as lists in address order. Handles are numbered as the model numbers its blocks
// (CachingAllocatorModel::order: a new segment's block, then a split's remainder), and a merged block keeps the
// lower one's. Addresses: under driver placement each segment lies below the one before, a split's remainder right
// after its part (in bytes); else the handle stands for the address.
class ReferenceAllocator {
 public:
  explicit ReferenceAllocator(bool driver = false) : driver_(driver) {}
  std::uint32_t malloc(double bytes, int stream) {
    const std::uint64_t req = std::uint64_t(bytes);
    const std::uint64_t size = req <= 512 ? 512 : (req + 511) / 512 * 512;
    const bool small = size <= (1u << 20);
    Block* best = nullptr;
    std::size_t seg = 0;
    for (std::size_t s = 0; s < segments_.size(); ++s)
      for (auto& b : segments_[s])
        if (b.free && b.small == small && b.stream == stream && b.size >= size &&
            (!best || b.size < best->size || (b.size == best->size && below(b, *best)))) {
          best = &b;
          seg = s;
        }
    if (!best) {
      const std::uint64_t mib = 1 << 20;
      const std::uint64_t bytes_of_segment =
          small ? 2 * mib : size < 10 * mib ? 20 * mib : (size + 2 * mib - 1) / (2 * mib) * (2 * mib);
      if (reserved_ + bytes_of_segment > capacity) {  // cudaMalloc fails: free the segments no tensor uses
        ++releases;
        std::erase_if(segments_, [&](const std::vector<Block>& s) {
          if (s.size() != 1 || !s[0].free) return false;
          reserved_ -= s[0].size;
          return true;
        });
        oom = oom || reserved_ + bytes_of_segment > capacity;
      }
      reserved_ += bytes_of_segment;
      lowest_ -= bytes_of_segment;
      segments_.push_back({Block{bytes_of_segment, next_++, stream, small, true, lowest_}});
      seg = segments_.size() - 1;
      best = &segments_[seg].back();
    }
    const std::uint64_t rest = best->size - size;
    const std::uint32_t handle = best->handle;
    const std::uint64_t after = best->addr + size;
    best->size = size;
    best->free = false;
    if ((small && rest >= 512) || (!small && rest > (1u << 20))) {
      auto it = std::find_if(segments_[seg].begin(), segments_[seg].end(), [&](const Block& b) { return b.handle == handle; });
      segments_[seg].insert(it + 1, Block{rest, next_++, stream, small, true, after});
    } else {
      find(handle)->size += rest;
    }
    allocated_ += find(handle)->size;
    peak_reserved_ = std::max(peak_reserved_, reserved_);
    peak_allocated_ = std::max(peak_allocated_, allocated_);
    return handle;
  }
  void free(std::uint32_t handle) {
    for (auto& seg : segments_)
      for (std::size_t i = 0; i < seg.size(); ++i) {
        if (seg[i].handle != handle) continue;
        allocated_ -= seg[i].size;
        seg[i].free = true;
        if (i + 1 < seg.size() && seg[i + 1].free) {
          seg[i].size += seg[i + 1].size;
          seg.erase(seg.begin() + std::ptrdiff_t(i) + 1);
        }
        if (i > 0 && seg[i - 1].free) {
          seg[i - 1].size += seg[i].size;
          seg.erase(seg.begin() + std::ptrdiff_t(i));
        }
        return;
      }
  }
  double peak_reserved() const { return double(peak_reserved_); }
  double peak_allocated() const { return double(peak_allocated_); }
  std::uint64_t capacity = ~std::uint64_t(0);
  bool oom = false;
  int releases = 0;

 private:
  struct Block {
    std::uint64_t size;
    std::uint32_t handle;
    int stream;
    bool small, free;
    std::uint64_t addr;
  };
  bool below(const Block& a, const Block& b) const { return driver_ ? a.addr < b.addr : a.handle < b.handle; }
  bool driver_;
  std::uint64_t lowest_ = 0;
  Block* find(std::uint32_t handle) {
    for (auto& seg : segments_)
      for (auto& b : seg)
        if (b.handle == handle) return &b;
    return nullptr;
  }
  std::vector<std::vector<Block>> segments_;
  std::uint32_t next_ = 0;
  std::uint64_t reserved_ = 0, allocated_ = 0, peak_reserved_ = 0, peak_allocated_ = 0;
};

using Live = std::vector<std::pair<std::uint32_t, std::uint32_t>>;  // blocks both allocators hold, by their handles

// One random step of two allocators in lockstep: a third of the steps free a random block both hold, the rest make
// the same request of both (a size from `sizes`, one stream in four the second), and `same` checks they answered
// with the same block; their peaks must agree after every step.
template <class A, class B, class Same>
void lockstep(std::mt19937_64& rng, const std::vector<double>& sizes, A& a, B& b, Live& live, Same same) {
  if (!live.empty() && rng() % 3 == 0) {
    const std::size_t i = rng() % live.size();
    a.free(live[i].first);
    b.free(live[i].second);
    live[i] = live.back();
    live.pop_back();
  } else {
    const double bytes = sizes[rng() % sizes.size()];
    const int stream = int(rng() % 4 == 0);
    const auto x = a.malloc(bytes, stream), y = b.malloc(bytes, stream);
    REQUIRE(same(x, y));
    live.emplace_back(x, y);
  }
  REQUIRE(a.peak_reserved() == b.peak_reserved());
  REQUIRE(a.peak_allocated() == b.peak_allocated());
}
}  // namespace

TEST_CASE("CachingAllocatorModel: the same choices as a brute-force reference over random steps", "[allocator]") {
  // Sizes from 1 B to 4 GiB (every size class of the model's index, the small pool and both large segment rules),
  // drawn from a few hundred values so equal sizes meet often, on two streams; a third of the operations free a
  // random live block.
  std::mt19937_64 rng(20261123);
  std::vector<double> sizes;
  for (int i = 0; i < 300; ++i) sizes.push_back(std::floor(std::exp2(std::uniform_real_distribution<>(0, 32)(rng))));
  for (int trial = 0; trial < 4; ++trial) {
    CachingAllocatorModel model;
    ReferenceAllocator ref;
    Live live;  // (model's slot, reference's)
    // The same block: the model's slots are reused, its order is not.
    auto same = [&](std::uint32_t m, std::uint32_t r) { return model.order(m) == r; };
    for (int op = 0; op < 3000; ++op) lockstep(rng, sizes, model, ref, live, same);
  }
}

TEST_CASE("CachingAllocatorModel: driver placement makes the reference's choices over random steps", "[allocator]") {
  // As above, with blocks placed as the driver places them: equal free sizes meet often, and the lowest address (the
  // newest segment's, or the lower part of one) must win in the model's index as in the brute-force scan; under a
  // capacity too, where released segments leave the addresses going down.
  std::mt19937_64 rng(20261129);
  std::vector<double> sizes;
  for (int i = 0; i < 300; ++i) sizes.push_back(std::floor(std::exp2(std::uniform_real_distribution<>(0, 32)(rng))));
  for (std::uint64_t gib : {0, 0, 128, 256}) {
    CachingAllocatorModel model(gpuplan::Placement::driver);
    ReferenceAllocator ref(/*driver=*/true);
    if (gib > 0) {
      model.set_capacity(double(gib << 30));
      ref.capacity = gib << 30;
    }
    Live live;
    auto same = [&](std::uint32_t m, std::uint32_t r) { return model.order(m) == r; };
    for (int op = 0; op < 3000; ++op) {
      lockstep(rng, sizes, model, ref, live, same);
      REQUIRE(model.releases() == ref.releases);
    }
  }
}

TEST_CASE("CachingAllocatorModel: long runs of near-equal free blocks choose as the reference does", "[allocator]") {
  // Three sizes 512 B apart (one size class) and one that splits 20 MiB segments: the holes random frees leave
  // between live blocks pile up in one class (up to 168 long, counted once), filed at its front, its back and
  // inside, and taken from either end of it (a layer's tensors freed in every layer do this to the model's classes).
  std::mt19937_64 rng(20261125);
  const std::vector<double> sizes = {3 * MiB, 3 * MiB + 512, 3 * MiB + 1024, 7 * MiB};
  CachingAllocatorModel model;
  ReferenceAllocator ref;
  Live live;
  auto same = [&](std::uint32_t m, std::uint32_t r) { return model.order(m) == r; };
  for (int op = 0; op < 4000; ++op) lockstep(rng, sizes, model, ref, live, same);
  // Then most live blocks are freed and the classes shrink, and the steps go on in the storage that is left.
  for (std::size_t keep = live.size() / 8; live.size() > keep;) {
    const std::size_t i = rng() % live.size();
    model.free(live[i].first);
    ref.free(live[i].second);
    live[i] = live.back();
    live.pop_back();
  }
  for (int op = 0; op < 4000; ++op) lockstep(rng, sizes, model, ref, live, same);
}

TEST_CASE("CachingAllocatorModel: at its capacity it frees its cached segments as the reference does", "[allocator]") {
  // The random steps above under capacities from 64 to 512 GiB: live blocks outgrow them, so cached segments are
  // released, and at last a request does not fit (out of memory; both go on, over the capacity).
  std::mt19937_64 rng(20261124);
  std::vector<double> sizes;
  for (int i = 0; i < 300; ++i) sizes.push_back(std::floor(std::exp2(std::uniform_real_distribution<>(0, 32)(rng))));
  int released_in_time = 0, ran_out = 0;
  for (std::uint64_t gib : {64, 128, 256, 512}) {
    CachingAllocatorModel model;
    ReferenceAllocator ref;
    model.set_capacity(double(gib << 30));
    ref.capacity = gib << 30;
    Live live;
    auto same = [&](std::uint32_t m, std::uint32_t r) { return model.order(m) == r; };
    bool made_room = false;
    for (int op = 0; op < 3000; ++op) {
      lockstep(rng, sizes, model, ref, live, same);
      REQUIRE(model.releases() == ref.releases);
      REQUIRE(model.out_of_memory() == ref.oom);
      made_room = made_room || (model.releases() > 0 && !model.out_of_memory());
    }
    released_in_time += made_room;
    ran_out += model.out_of_memory();
  }
  CHECK(released_in_time > 0);  // a release made room before the capacity ran out
  CHECK(ran_out > 0);           // and the live blocks outgrew it in the end
}

TEST_CASE("CachingAllocatorModel: a failed cudaMalloc frees whole cached segments only", "[allocator]") {
  // Hand-worked: two 40 MiB segments and a 100 MiB one under a 200 MiB capacity. One 40 MiB block is freed (its
  // segment is cached whole); the 100 MiB one is split, half freed (its segment is partly used). A 90 MiB request
  // fits in no cached block and 180 + 90 > 200: the allocator frees the whole 40 MiB segment only (140 reserved)
  // and 140 + 90 = 230 is still over: out of memory.
  auto cached = [](double capacity) {
    CachingAllocatorModel m;
    m.set_capacity(capacity);
    const auto x = m.malloc(40 * MiB);
    m.malloc(40 * MiB);
    const auto big = m.malloc(100 * MiB);
    m.free(big);
    m.malloc(50 * MiB);  // carved from the cached 100 MiB block: its segment stays in use
    m.free(x);
    return m;
  };
  CachingAllocatorModel a = cached(200 * MiB);
  CHECK(a.peak_reserved() == 180 * MiB);
  CHECK_FALSE(a.out_of_memory());
  a.malloc(90 * MiB);
  CHECK(a.releases() == 1);
  CHECK(a.out_of_memory());
  // The same at 240 MiB: the release leaves 140, and 140 + 90 fits.
  CachingAllocatorModel b = cached(240 * MiB);
  b.malloc(90 * MiB);
  CHECK(b.releases() == 1);
  CHECK_FALSE(b.out_of_memory());
  CHECK(b.peak_reserved() == 230 * MiB);  // 140 after the release, + 90
}

TEST_CASE("CachingAllocatorModel: a model on storage another left answers as a fresh one", "[allocator]") {
  // The same requests, on a model made alone, one made while another is alive, and one made after both ended
  // (which takes over emptied storage that held blocks in every class used).
  auto run = [](CachingAllocatorModel& a) {
    std::vector<CachingAllocatorModel::Handle> h;
    for (int i = 0; i < 200; ++i) h.push_back(a.malloc(double(1 + i % 7) * 3 * MiB + 4096.0 * i, i % 2));
    for (std::size_t i = 0; i < h.size(); i += 3) a.free(h[i]);
    for (int i = 0; i < 50; ++i) a.malloc(double(2 + i % 5) * MiB);
    return std::pair(a.peak_reserved(), a.peak_allocated());
  };
  std::pair<double, double> fresh, outer, inner, after;
  {
    CachingAllocatorModel a;
    fresh = run(a);
  }
  {
    CachingAllocatorModel a;
    outer = run(a);
    CachingAllocatorModel b;
    inner = run(b);
  }
  {
    // A model moved from, ending while no storage is spare, leaves nothing usable, and the next one is fresh.
    std::optional<CachingAllocatorModel> from(std::in_place);
    run(*from);
    CachingAllocatorModel to(std::move(*from));
    from.reset();
  }
  CachingAllocatorModel c;
  after = run(c);
  CHECK(fresh.first > fresh.second);  // the sequence fragments: the reserve depends on every block's place
  CHECK(outer == fresh);
  CHECK(inner == fresh);
  CHECK(after == fresh);
}

TEST_CASE("CachingAllocatorModel: a batch freed at once leaves the state freeing each request would", "[allocator]") {
  // From a fragmented state, a batch of requests (some carved from cached blocks, some adding segments), then
  // either free_batch or a free of each request in a random order; afterwards both models must make the same
  // choices (the block each request gets, in address order) and peaks over a random sequence.
  std::mt19937_64 rng(20261124);
  std::vector<double> sizes;
  for (int i = 0; i < 200; ++i) sizes.push_back(std::floor(std::exp2(std::uniform_real_distribution<>(8, 30)(rng))));
  int carved_from_cache = 0;
  for (int trial = 0; trial < 40; ++trial) {
    CachingAllocatorModel batch;
    std::vector<CachingAllocatorModel::Handle> live;
    for (int op = 0; op < 400; ++op) {
      if (!live.empty() && rng() % 3 == 0) {
        const std::size_t i = rng() % live.size();
        batch.free(live[i]);
        live[i] = live.back();
        live.pop_back();
      } else {
        live.push_back(batch.malloc(sizes[rng() % sizes.size()], int(rng() % 4 == 0)));
      }
    }
    CachingAllocatorModel each = batch;
    const double reserved = batch.peak_reserved();
    batch.begin_batch();
    std::vector<CachingAllocatorModel::Handle> a, b;
    for (int i = 0; i < 1 + int(rng() % 60); ++i) {
      const double bytes = sizes[rng() % sizes.size()];
      const int stream = int(rng() % 4 == 0);
      a.push_back(batch.malloc(bytes, stream));
      b.push_back(each.malloc(bytes, stream));
      REQUIRE(batch.order(a.back()) == each.order(b.back()));
    }
    if (batch.peak_reserved() == reserved) ++carved_from_cache;
    batch.free_batch();
    std::shuffle(b.begin(), b.end(), rng);
    for (auto h : b) each.free(h);
    Live after;
    auto same = [&](std::uint32_t x, std::uint32_t y) { return batch.order(x) == each.order(y); };
    for (int op = 0; op < 300; ++op) lockstep(rng, sizes, batch, each, after, same);
  }
  CHECK(carved_from_cache > 5);  // batches served wholly from cached blocks, not only from new segments
}
