// The CLI's arena (src/process_heap.h) on a buffer of the test's own: its classes, alignment, reuse and limits.
#include <catch2/catch.hpp>

#include <cstdint>
#include <set>
#include <vector>

#include "process_heap.h"

using gpuplan::cli::Arena;

TEST_CASE("the arena's size classes hold every request, round by at most a third, and are numbered in order",
          "[process_heap]") {
  // By hand: 16-byte steps to 64, then 3/4 and all of each power of two.
  CHECK(Arena::size_class(0).bytes == 16);
  CHECK(Arena::size_class(1).bytes == 16);
  CHECK(Arena::size_class(17).bytes == 32);
  CHECK(Arena::size_class(64).index == 3);
  CHECK(Arena::size_class(65).bytes == 96);
  CHECK(Arena::size_class(65).index == 4);
  CHECK(Arena::size_class(97).bytes == 128);
  CHECK(Arena::size_class(129).bytes == 192);
  CHECK(Arena::size_class(768 << 10).bytes == std::size_t(768) << 10);
  CHECK(Arena::size_class((768 << 10) + 1).bytes == Arena::kLargest);
  CHECK(Arena::size_class(Arena::kLargest).index == Arena::kClasses - 1);
  int last = 0;
  for (std::size_t n = 1; n <= Arena::kLargest; n += 1 + n / 7) {
    const auto c = Arena::size_class(n);
    CHECK(c.bytes >= n);
    CHECK(c.bytes % Arena::kAlign == 0);
    CHECK((n <= 64 || 2 * c.bytes < 3 * n));  // the rounding is under a third of the block
    CHECK(c.index >= last);
    CHECK(c.index < Arena::kClasses);
    last = c.index;
  }
}

TEST_CASE("the arena hands out aligned, disjoint blocks, reuses freed ones by class and says when it is spent",
          "[process_heap]") {
  alignas(16) static unsigned char buffer[4096];
  Arena a;
  CHECK(!a.owns(buffer));  // nothing attached: the caller serves everything
  CHECK(a.allocate(8) == nullptr);
  a.attach(buffer, sizeof buffer);
  CHECK(a.allocate(Arena::kLargest + 1) == nullptr);  // larger requests are the caller's

  void* p = a.allocate(40);
  void* q = a.allocate(40);
  REQUIRE(p != nullptr);
  REQUIRE(q != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(p) % Arena::kAlign == 0);
  CHECK(static_cast<unsigned char*>(q) - static_cast<unsigned char*>(p) == 16 + 48);  // header + the 48-byte class
  CHECK(a.owns(p));
  CHECK(!a.owns(buffer + sizeof buffer));
  a.deallocate(p);
  CHECK(a.allocate(33) == p);  // the same class, newest freed first
  void* r = a.allocate(100);   // another class: a new block
  CHECK(r != p);
  a.deallocate(q);
  CHECK(a.allocate(100) != q);  // a freed block serves its own class only

  // Spent: the rest of the buffer, then nothing.
  std::vector<void*> blocks;
  while (void* b = a.allocate(200)) blocks.push_back(b);
  CHECK(a.used() <= sizeof buffer);
  CHECK(sizeof buffer - a.used() < 16 + 256);
  std::set<void*> distinct(blocks.begin(), blocks.end());
  CHECK(distinct.size() == blocks.size());
  a.deallocate(blocks.back());
  CHECK(a.allocate(256) == blocks.back());  // a freed block still serves once the range is spent
}
