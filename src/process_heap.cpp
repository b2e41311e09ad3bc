// The gpuplan binary's operator new and delete: served from the Arena of process_heap.h, in a 2 MiB-aligned range
// backed by a transparent huge page (see there why), else by malloc as usual. Only the thread that allocates first
// uses the arena (the CLI has one thread; a library's helper thread would go to malloc), and requests the arena does
// not serve go to malloc.
// Not built with the sanitizers, which bring their own operator new.
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "process_heap.h"

namespace {

using gpuplan::cli::Arena;

// Address space reserved, not memory: pages are committed as they are touched. Commands stay in the first huge page
// (measured: 7B `train` 0.77 MiB, 405B `train` 1.55 MiB, 405B `infer` 0.55 MiB, 70B `plan train` 1.20 MiB); past
// the end requests go to malloc.
constexpr std::size_t kReserve = std::size_t(16) << 20;
constexpr std::size_t kHugePage = std::size_t(2) << 20;  // x86-64's transparent huge page

constinit Arena arena;
constinit std::atomic<bool> claimed{false};
// This thread's relation to the arena: 0 not asked yet, 1 its owner, 2 another thread.
constinit thread_local int role = 0;

void attach_arena() {
  void* p = mmap(nullptr, kReserve + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) return;  // the arena stays empty and malloc serves everything
  char* const a = reinterpret_cast<char*>((reinterpret_cast<std::uintptr_t>(p) + kHugePage - 1) & ~(kHugePage - 1));
  // Only on a huge page: the first touch maps all of its 4 KiB pages at once. Where the kernel gives none (THP
  // `never`, or no free huge page) glibc's heap serves, which packs small blocks into fewer pages than size classes.
  unsigned char second_page = 0;
  if (madvise(a, kReserve, MADV_HUGEPAGE) == 0) {
    *static_cast<volatile char*>(a) = 0;
    if (mincore(a + 4096, 4096, &second_page) != 0) second_page = 0;
  }
  if ((second_page & 1) == 0) {
    munmap(p, kReserve + kHugePage);
    return;
  }
  arena.attach(a, kReserve);
}

bool owner() {
  if (role == 0) {
    bool expected = false;
    role = claimed.compare_exchange_strong(expected, true) ? 1 : 2;
    if (role == 1) attach_arena();
  }
  return role == 1;
}

void* allocate(std::size_t n) {
  if (owner())
    if (void* p = arena.allocate(n)) return p;
  return std::malloc(n == 0 ? 1 : n);
}

}  // namespace

void* operator new(std::size_t n) {
  for (;;) {
    if (void* p = allocate(n)) return p;
    const std::new_handler handler = std::get_new_handler();
    if (!handler) throw std::bad_alloc();
    handler();
  }
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return ::operator new(n, t); }

void operator delete(void* p) noexcept {
  if (!p) return;
  if (!arena.owns(p)) return std::free(p);
  if (role == 1) arena.deallocate(p);  // another thread's delete of an arena block leaves it in place
}
void operator delete[](void* p) noexcept { ::operator delete(p); }
void operator delete(void* p, std::size_t) noexcept { ::operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { ::operator delete(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { ::operator delete(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { ::operator delete(p); }
