// Which k of n values cpu::topk_indices selects when equal values straddle the k-th place.
//
// The CPU reference (like torch.topk on the CPU) fills (value, index) pairs in index order and runs
// std::partial_sort when k * 64 <= n, else std::nth_element, with a comparator on values only; among equal
// values the chosen ones are whichever the algorithm's sequence of comparisons and swaps leaves in front. To
// pick the same set, this header replays those algorithms step for step as libstdc++ performs them
// (heap selection for partial_sort; introselect with median-of-three pivots, unguarded partitioning and a final
// insertion sort for nth_element). The order inside the selected set is not replayed: callers order it
// themselves. Plain C++ usable from host and device code, so CPU tests check it against cpu::topk_indices.
#pragma once
#include <cstdint>

#ifdef __CUDACC__
#define DS4_HD __host__ __device__
#else
#define DS4_HD
#endif

namespace ds4::topk_replay {

struct Item {
  float v;
  int32_t i;
};

// The CPU comparator: NaN first, then larger values first.
DS4_HD inline bool before(const Item& x, const Item& y) {
  const bool xn = x.v != x.v, yn = y.v != y.v;
  return (xn && !yn) || (x.v > y.v);
}
DS4_HD inline void swap_items(Item* a, Item* b) {
  const Item t = *a;
  *a = *b;
  *b = t;
}

// Sifts `value` up from `hole` towards `top` (std::__push_heap).
DS4_HD inline void push_heap(Item* f, int64_t hole, int64_t top, Item value) {
  int64_t parent = (hole - 1) / 2;
  while (hole > top && before(f[parent], value)) {
    f[hole] = f[parent];
    hole = parent;
    parent = (hole - 1) / 2;
  }
  f[hole] = value;
}

// Moves the hole at `hole` down to a leaf along larger children, then pushes `value` back up (std::__adjust_heap).
DS4_HD inline void adjust_heap(Item* f, int64_t hole, int64_t len, Item value) {
  const int64_t top = hole;
  int64_t child = hole;
  while (child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (before(f[child], f[child - 1])) child--;
    f[hole] = f[child];
    hole = child;
  }
  if ((len & 1) == 0 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    f[hole] = f[child - 1];
    hole = child - 1;
  }
  push_heap(f, hole, top, value);
}

DS4_HD inline void make_heap(Item* f, int64_t len) {
  if (len < 2) return;
  for (int64_t parent = (len - 2) / 2;; parent--) {
    adjust_heap(f, parent, len, f[parent]);
    if (parent == 0) return;
  }
}

// std::__heap_select(first, middle, last): afterwards [0, middle) holds the selected items as a heap.
DS4_HD inline void heap_select(Item* f, int64_t middle, int64_t last) {
  make_heap(f, middle);
  for (int64_t i = middle; i < last; i++)
    if (before(f[i], f[0])) {  // std::__pop_heap(first, middle, i)
      const Item value = f[i];
      f[i] = f[0];
      adjust_heap(f, 0, middle, value);
    }
}

DS4_HD inline void insertion_sort(Item* f, int64_t n) {
  for (int64_t i = 1; i < n; i++) {
    const Item val = f[i];
    if (before(val, f[0])) {
      for (int64_t j = i; j > 0; j--) f[j] = f[j - 1];
      f[0] = val;
    } else {  // std::__unguarded_linear_insert
      int64_t last = i, next = i - 1;
      while (before(val, f[next])) {
        f[last] = f[next];
        last = next;
        next--;
      }
      f[last] = val;
    }
  }
}

DS4_HD inline void move_median_to_first(Item* result, Item* a, Item* b, Item* c) {
  if (before(*a, *b)) {
    if (before(*b, *c)) swap_items(result, b);
    else if (before(*a, *c)) swap_items(result, c);
    else swap_items(result, a);
  } else if (before(*a, *c)) {
    swap_items(result, a);
  } else if (before(*b, *c)) {
    swap_items(result, c);
  } else {
    swap_items(result, b);
  }
}

// std::__unguarded_partition(first, last, pivot), with indices into f.
DS4_HD inline int64_t unguarded_partition(Item* f, int64_t first, int64_t last, int64_t pivot) {
  for (;;) {
    while (before(f[first], f[pivot])) first++;
    last--;
    while (before(f[pivot], f[last])) last--;
    if (!(first < last)) return first;
    swap_items(&f[first], &f[last]);
    first++;
  }
}

DS4_HD inline int floor_log2(int64_t n) {
  int r = 0;
  while (n > 1) {
    n >>= 1;
    r++;
  }
  return r;
}

// std::nth_element(f, f + nth, f + n).
DS4_HD inline void nth_element(Item* f, int64_t nth, int64_t n) {
  if (n == 0 || nth == n) return;
  int64_t first = 0, last = n;
  int depth = floor_log2(n) * 2;
  while (last - first > 3) {
    if (depth == 0) {
      heap_select(f + first, nth + 1 - first, last - first);
      swap_items(&f[first], &f[nth]);
      return;
    }
    depth--;
    const int64_t mid = first + (last - first) / 2;
    move_median_to_first(&f[first], &f[first + 1], &f[mid], &f[last - 1]);
    const int64_t cut = unguarded_partition(f, first + 1, last, first);
    if (cut <= nth) first = cut;
    else last = cut;
  }
  insertion_sort(f + first, last - first);
}

// Leaves in f[0, k) the items cpu::topk_indices selects from f[0, n) (filled in index order), 1 <= k <= n.
DS4_HD inline void select_topk(Item* f, int64_t n, int64_t k) {
  if (k * 64 <= n) heap_select(f, k, n);  // partial_sort's selection; its final sort_heap only reorders
  else nth_element(f, k - 1, n);          // the CPU then sorts [0, k-1), which only reorders
}

}  // namespace ds4::topk_replay
