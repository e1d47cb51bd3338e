// GCC 12 only: a call request that is an aggregate temporary with a destructor is rejected at
// compile time (docs/gcc12-coroutines.md). A named variable compiles.
#include <beamlet/beamlet.hpp>

#include <string>

struct put {
  std::string key;
  using reply_type = int;
};
struct server : beamlet::gen_server<server> {
  int handle_call(const put&, beamlet::from<int>) { return 0; }
};

beamlet::task<> body(beamlet::process& self, beamlet::pid p) {
#ifdef BEAMLET_COMPILE_FAIL
  (void)co_await beamlet::call(self, beamlet::server_ref<server>(p), put{"k"});
#else
  const put request{"k"};
  (void)co_await beamlet::call(self, beamlet::server_ref<server>(p), request);
#endif
}
int main() {
  (void)&body;
}
