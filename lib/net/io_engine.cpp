#include "io_engine.hpp"

BEAMLET_BEGIN_NAMESPACE
namespace net::detail {

io_engine::io_engine() : work_(boost::asio::make_work_guard(ioc_)) {
  thread_ = std::thread([this] {
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
