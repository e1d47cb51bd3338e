// The server of the call benchmarks: a gen_server that answers each `get` with the number of
// calls it has answered.
#pragma once

#include <cstdint>

#include <beamlet/otp/gen_server.hpp>

namespace beamlet::bench {

struct get {
  using reply_type = std::int64_t;
};

class counter : public gen_server<counter> {
 public:
  std::int64_t handle_call(const get&, from<std::int64_t>) { return ++n_; }

 private:
  std::int64_t n_ = 0;
};

}  // namespace beamlet::bench
