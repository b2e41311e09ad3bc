// The CLI process's heap for C++ allocations (operator new, process_heap.cpp): one arena, 2 MiB-aligned and marked
// for transparent huge pages, so a command faults its heap in as one 2 MiB page instead of ~150 pages of 4 KiB.
//
// Why: a command lives for a few milliseconds, and on the VMs we measure on a fresh 4 KiB page costs 7–11 µs to
// fault in (kernel zeroing, page tables, memory-cgroup charge), a huge page ~130 µs (when none is free the kernel may
// compact memory first: one first touch in 30 took 3.5 ms here). A `train --params 7B` touched 572 KiB of glibc's
// heap, 143 faults: a fifth of its time. Where the kernel gives no huge page (THP set to `never`, or none free) the
// arena is not used: on 4 KiB pages its size classes touched more pages than glibc's heap (7B `train` 296 faults
// against 255).
// The general-purpose allocators Debian packages were slower for a process this short, measured through LD_PRELOAD
// on the same 7B `train` (2026-11-24, medians of 80 runs): glibc 9.06 ms, this arena (as a preload) 7.35,
// mimalloc 2.0.9 with large OS pages 8.00 (its own start-up and library load), jemalloc 5.3 with thp:always
// 10.29, tcmalloc-minimal 2.10 23.8.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>

namespace gpuplan::cli {

// Serves requests up to kLargest bytes from [begin, begin + bytes) by size class — 16-byte steps to 64 bytes, then
// two classes per octave (3/4 and all of a power of two), so at most a third of a block is rounding — each with a
// list of freed blocks, taken newest first. A block is a 16-byte header holding its class, then the payload: every
// payload is 16-byte aligned (operator new's default alignment) and operator delete without a size finds its class.
// Larger requests, and any once the range is spent, are the caller's to serve elsewhere (allocate returns null).
class Arena {
 public:
  static constexpr std::size_t kAlign = 16;
  // Larger blocks go to malloc: rounding one up by up to a third would spend a huge page on few requests, and no
  // command asks for one often (its largest are the allocator model's tables and the report's text).
  static constexpr std::size_t kLargest = std::size_t(1) << 20;
  static constexpr int kClasses = 4 + 2 * 14;  // 16–64 B, then (96, 128) … (768 KiB, 1 MiB)

  struct SizeClass {
    int index;
    std::size_t bytes;
  };
  // The class of a request of n ≤ kLargest bytes.
  static constexpr SizeClass size_class(std::size_t n) {
    if (n <= 64) {
      const std::size_t steps = n == 0 ? 1 : (n + 15) / 16;
      return {int(steps) - 1, steps * 16};
    }
    const int k = std::bit_width(n - 1);  // 2^(k-1) < n ≤ 2^k, k ≥ 7
    const std::size_t three_quarters = std::size_t(3) << (k - 2);
    return n <= three_quarters ? SizeClass{4 + 2 * (k - 7), three_quarters}
                               : SizeClass{5 + 2 * (k - 7), std::size_t(1) << k};
  }

  constexpr Arena() = default;
  // The range to serve from; begin is 16-byte aligned.
  void attach(void* begin, std::size_t bytes) {
    begin_ = next_ = static_cast<char*>(begin);
    end_ = begin_ + bytes;
  }

  void* allocate(std::size_t n) {
    if (n > kLargest) return nullptr;
    const SizeClass c = size_class(n);
    if (Free* f = free_[c.index]) {
      free_[c.index] = f->next;
      return f;
    }
    if (std::size_t(end_ - next_) < kHeader + c.bytes) return nullptr;
    char* block = next_;
    next_ += kHeader + c.bytes;
    *reinterpret_cast<std::uint32_t*>(block) = std::uint32_t(c.index);
    return block + kHeader;
  }
  bool owns(const void* p) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    return a >= reinterpret_cast<std::uintptr_t>(begin_) && a < reinterpret_cast<std::uintptr_t>(end_);
  }
  // p: a payload this arena allocated and has not taken back.
  void deallocate(void* p) {
    const auto index = *reinterpret_cast<const std::uint32_t*>(static_cast<char*>(p) - kHeader);
    Free* f = static_cast<Free*>(p);
    f->next = free_[index];
    free_[index] = f;
  }
  // Bytes handed out at some point (blocks with their headers): how far into the range the arena has reached.
  std::size_t used() const { return std::size_t(next_ - begin_); }

 private:
  static constexpr std::size_t kHeader = kAlign;
  struct Free {
    Free* next;
  };
  char* begin_ = nullptr;
  char* next_ = nullptr;
  char* end_ = nullptr;
  Free* free_[kClasses] = {};
};

}  // namespace gpuplan::cli
