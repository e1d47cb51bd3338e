// GCC 12 only: gen_server start arguments that are aggregate temporaries with a destructor are
// rejected at compile time (GCC 12 miscompiles them in a co_await expression, see
// docs/gcc12-coroutines.md). A named variable compiles.
#include <beamlet/beamlet.hpp>

#include <string>

struct config {
  std::string path;
};
struct server : beamlet::gen_server<server> {
  explicit server(config) {}
};

beamlet::task<> body(beamlet::process& self) {
#ifdef BEAMLET_COMPILE_FAIL
  (void)co_await server::start_link(self, {}, config{"x"});
#else
  const config c{"x"};
  (void)co_await server::start_link(self, {}, c);
#endif
}
int main() {
  (void)&body;
}
