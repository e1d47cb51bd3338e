#include "timer_wheel.hpp"

#include <algorithm>
#include <bit>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace detail {

std::uint64_t timer_wheel::tick_floor(clock_time t) noexcept {
  const auto ns = t.time_since_epoch().count();
  return ns <= 0 ? 0 : static_cast<std::uint64_t>(ns) >> tick_shift;
}

std::uint64_t timer_wheel::tick_ceil(clock_time t) noexcept {
  if (t == clock_time::max()) return never;
  const auto ns = t.time_since_epoch().count();
  if (ns <= 0) return 0;
  const auto u = static_cast<std::uint64_t>(ns);
  return (u >> tick_shift) + ((u & ((std::uint64_t{1} << tick_shift) - 1)) != 0 ? 1 : 0);
}

clock_time timer_wheel::time_of(std::uint64_t tick) noexcept {
  if (tick >= (std::uint64_t{1} << (63 - tick_shift))) return clock_time::max();
  return clock_time(clock_time::duration(static_cast<clock_time::rep>(tick << tick_shift)));
}

void timer_wheel::chain::append(timer_entry* e) noexcept {
  e->next = nullptr;
  if (tail == nullptr)
    head = e;
  else
    tail->next = e;
  tail = e;
}

void timer_wheel::link(timer_entry* e, std::uint16_t where) noexcept {
  list& l = lists_[where];
  e->place = where;
  e->next = nullptr;
  e->prev = l.tail;
  if (l.tail == nullptr)
    l.head = e;
  else
    l.tail->next = e;
  l.tail = e;
  if (where < due_list) occupied_[where / slots] |= std::uint64_t{1} << (where % slots);
}

void timer_wheel::place(timer_entry* e, std::uint64_t tick) noexcept {
  if (tick <= elapsed_) {
    link(e, due_list);
    next_tick_ = std::min(next_tick_, elapsed_);
    return;
  }
  // The highest 6-bit digit in which the deadline and the wheel's time differ is the level: the
  // entry is in the current window of that level, in a slot after the current one.
  const auto level = static_cast<unsigned>(63 - std::countl_zero(tick ^ elapsed_)) / slot_bits;
  if (level >= levels) {
    link(e, overflow_list);
    // Looked at again when time enters the next top-level window (never: no deadline).
    if (tick != never) next_tick_ = std::min(next_tick_, next_top_window());
    return;
  }
  const auto slot = static_cast<unsigned>((tick >> (slot_bits * level)) & (slots - 1));
  link(e, static_cast<std::uint16_t>(level * slots + slot));
  const std::uint64_t window = elapsed_ & ~(slot_span(level + 1) - 1);
  next_tick_ = std::min(next_tick_, window + slot * slot_span(level));
}

void timer_wheel::insert(timer_entry* e) noexcept {
  ++size_;
  place(e, tick_ceil(e->deadline));
}

void timer_wheel::remove(timer_entry* e) noexcept {
  list& l = lists_[e->place];
  if (e->prev == nullptr)
    l.head = e->next;
  else
    e->prev->next = e->next;
  if (e->next == nullptr)
    l.tail = e->prev;
  else
    e->next->prev = e->prev;
  if (l.head == nullptr && e->place < due_list)
    occupied_[e->place / slots] &= ~(std::uint64_t{1} << (e->place % slots));
  e->place = timer_entry::unplaced;
  e->prev = e->next = nullptr;
  // An empty wheel has nothing to wait for: its owner must sleep without a deadline, not wake
  // for the one just removed (later removals may leave next_tick_ early, never late).
  if (--size_ == 0) next_tick_ = never;
}

timer_entry* timer_wheel::take(std::uint16_t where) noexcept {
  list& l = lists_[where];
  timer_entry* first = l.head;
  l.head = l.tail = nullptr;
  if (where < due_list) occupied_[where / slots] &= ~(std::uint64_t{1} << (where % slots));
  return first;
}

bool timer_wheel::earliest(unsigned& level, unsigned& slot, std::uint64_t& start) const noexcept {
  bool found = false;
  for (unsigned l = 0; l < levels; ++l) {
    if (occupied_[l] == 0) continue;
    const auto pos = static_cast<unsigned>((elapsed_ >> (slot_bits * l)) & (slots - 1));
    const std::uint64_t ahead = occupied_[l] & (~std::uint64_t{0} << pos);
    // Slots behind the current position cannot hold anything (see place()); were one to, it is
    // taken as due now rather than left behind.
    const unsigned s = ahead != 0 ? static_cast<unsigned>(std::countr_zero(ahead))
                                  : static_cast<unsigned>(std::countr_zero(occupied_[l]));
    const std::uint64_t window = elapsed_ & ~(slot_span(l + 1) - 1);
    const std::uint64_t at = ahead != 0 ? window + s * slot_span(l) : elapsed_;
    if (!found || at < start) {
      found = true;
      level = l;
      slot = s;
      start = at;
    }
  }
  return found;
}

void timer_wheel::recompute_next() noexcept {
  unsigned level = 0;
  unsigned slot = 0;
  std::uint64_t start = never;
  if (lists_[due_list].head != nullptr)
    next_tick_ = elapsed_;
  else if (earliest(level, slot, start))
    next_tick_ = start;
  else
    next_tick_ = never;
  for (const timer_entry* e = lists_[overflow_list].head; e != nullptr; e = e->next) {
    if (tick_ceil(e->deadline) != never) {
      next_tick_ = std::min(next_tick_, next_top_window());
      break;
    }
  }
}

std::uint64_t timer_wheel::next_top_window() const noexcept {
  return ((elapsed_ >> (slot_bits * levels)) + 1) << (slot_bits * levels);
}

void timer_wheel::settle(timer_entry* e, chain& out) noexcept {
  while (e != nullptr) {
    timer_entry* const after = e->next;
    const std::uint64_t tick = tick_ceil(e->deadline);
    if (tick <= elapsed_) {
      e->place = timer_entry::unplaced;
      out.append(e);
      --size_;
    } else {
      place(e, tick);  // a lower level, or back into the overflow list
    }
    e = after;
  }
}

timer_entry* timer_wheel::expire(std::uint64_t now_tick) noexcept {
  chain out;
  settle(take(due_list), out);
  const std::uint64_t top_window_before = elapsed_ >> (slot_bits * levels);
  for (;;) {
    unsigned level = 0;
    unsigned slot = 0;
    std::uint64_t start = 0;
    if (!earliest(level, slot, start) || start > now_tick) break;
    elapsed_ = std::max(elapsed_, start);
    settle(take(static_cast<std::uint16_t>(level * slots + slot)), out);
  }
  elapsed_ = std::max(elapsed_, now_tick);
  if ((elapsed_ >> (slot_bits * levels)) != top_window_before) settle(take(overflow_list), out);
  recompute_next();
  return out.head;
}

void timer_wheel::forget() noexcept {
  for (list& l : lists_) l = list{};
  for (std::uint64_t& o : occupied_) o = 0;
  size_ = 0;
  next_tick_ = never;
}

}  // namespace detail
BEAMLET_END_PRIVATE_NAMESPACE
