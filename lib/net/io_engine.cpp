#include "io_engine.hpp"

#include <pthread.h>

BEAMLET_BEGIN_NAMESPACE
namespace net::detail {

io_engine::io_engine() : work_(boost::asio::make_work_guard(ioc_)) {
  thread_ = std::thread([this] {
    ::pthread_setname_np(::pthread_self(), "beamlet-io");
    for (;;) {
      try {
        ioc_.run();
        return;
      } catch (...) {
        // A handler ran out of memory: keep serving the other sockets.
      }
    }
  });
}

void io_engine::attached(core::runtime_core& rt) {
  rt_ = &rt;
  core::runtime_core* r = &rt;
  core::add_metrics_collector(rt, "net", [count = open_count, r](metrics_writer& w) {
    w.family("net_open_sockets", "gauge", "Sockets and listeners open (the network layer).");
    w.sample("net_open_sockets", count->load(std::memory_order_relaxed));
    write_pool_metrics(*r, w);
  });
}

void io_engine::stopping() noexcept {
  work_.reset();
  ioc_.stop();
  if (thread_.joinable()) thread_.join();
}

io_engine::~io_engine() {
  stopping();
  // Handlers never run are destroyed with ioc_, and the sockets they kept alive with them.
}

}  // namespace net::detail
BEAMLET_END_NAMESPACE
