// The caching-allocator model against CUDACachingAllocator's rules, on hand-worked sequences.
#include <catch2/catch.hpp>
#include <gpuplan/memory/allocator.h>

using gpuplan::CachingAllocatorModel;

namespace {
constexpr double MiB = 1 << 20;
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
