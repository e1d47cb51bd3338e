#include "io_engine.hpp"

#include <algorithm>

#include <beamlet/observe/http_endpoint.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace net::detail {

namespace {
// Handlers one poll runs at most.
constexpr std::size_t poll_budget = 256;
}  // namespace

void io_engine::attached(core::runtime_core& rt) {
  rt_ = &rt;
  const unsigned n = std::max(1u, core::scheduler_count(rt));
  lanes_.reserve(n);
  for (unsigned i = 0; i < n; ++i) lanes_.push_back(std::make_unique<lane_state>());
  core::runtime_core* r = &rt;
  core::add_metrics_collector(rt, "net", [count = open_count, r](metrics_writer& w) {
    w.family("net_open_sockets", "gauge", "Sockets and listeners open (the network layer).");
    w.sample("net_open_sockets", count->load(std::memory_order_relaxed));
    write_pool_metrics(*r, w);
  });
  // The console's overview shows the sockets open as its `ports`.
  add_console_gauge(rt, "ports", [count = open_count] {
    return static_cast<std::int64_t>(count->load(std::memory_order_relaxed));
  });
  core::install_hook(rt, static_cast<core::scheduler_io*>(this));
}

unsigned io_engine::home() noexcept {
  const int here = core::current_scheduler(*rt_);
  if (here >= 0 && static_cast<unsigned>(here) < lanes_.size()) return static_cast<unsigned>(here);
  return next_lane();
}

std::size_t io_engine::run_own(lane_state& l) noexcept {
  std::size_t ran = 0;
  while (request* r = l.head) {
    l.head = r->next;
    if (l.head == nullptr) l.tail = nullptr;
    try {
      r->run();
    } catch (...) {
      // Out of memory in a request: as when a handler throws, the other sockets go on.
    }
    delete r;
    ++ran;
  }
  return ran;
}

std::size_t io_engine::poll(unsigned lane) noexcept {
  lane_state& l = *lanes_[lane];
  // The lane's own requests first: whatever the io_context holds was posted after them or by
  // another process (see post).
  std::size_t ran = run_own(l);
  try {
    // A budget, so that a lane with many busy sockets still lets its scheduler run the
    // processes the handlers woke (the rest wait for the next poll, a few runs away).
    for (std::size_t n = 0; n < poll_budget && l.ioc.poll_one() != 0; ++n) ++ran;
  } catch (...) {
    ++ran;  // a handler ran out of memory; the rest run at the next poll
  }
  return ran + run_own(l);  // what the handlers asked for
}

void io_engine::flush(unsigned lane) noexcept {
  (void)run_own(*lanes_[lane]);
}

void io_engine::wait(unsigned lane, std::chrono::steady_clock::time_point deadline) noexcept {
  lane_state& l = *lanes_[lane];
  // Requests the worker made just before it parked (a message it dropped while ending timers
  // held a socket): they come first, and the worker must not sleep on them.
  if (l.head != nullptr) {
    run_own(l);
    return;
  }
  try {
    if (deadline == std::chrono::steady_clock::time_point::max())
      l.ioc.run_one();
    else
      l.ioc.run_one_until(deadline);
  } catch (...) {
    // A handler ran out of memory: the scheduler calls again.
  }
}

void io_engine::interrupt(unsigned lane) noexcept {
  try {
    boost::asio::post(lanes_[lane]->ioc, [] {});
  } catch (...) {
    // Out of memory: the worker wakes at its next deadline or the next readiness.
  }
}

void io_engine::stopping() noexcept {
  // The schedulers are joined: what is still queued never runs, and goes with the lanes.
}

io_engine::lane_state::~lane_state() {
  while (request* r = head) {
    head = r->next;
    delete r;
  }
}

io_engine::~io_engine() {
  // The core emptied its hook slot before destroying the extensions. Each lane's handlers hold
  // only objects of that lane (a socket's requests go to its own lane; an accepted connection
  // moves to its owner's lane before it is handed over), so the lanes go one by one.
  lanes_.clear();
}

}  // namespace net::detail
BEAMLET_END_PRIVATE_NAMESPACE
