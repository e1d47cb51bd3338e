// A receive is either value style (no handlers) or handler style (all handlers); mixing is a
// compile-time error rather than a clause that silently drops its message.
#include <beamlet/beamlet.hpp>

beamlet::task<> body(beamlet::process& self) {
#ifdef BEAMLET_COMPILE_FAIL
  co_await self.receive(beamlet::on<int>([](int x) { return x; }), beamlet::on<long>());
#else
  co_await self.receive(beamlet::on<int>([](int x) { return x; }),
                        beamlet::on<long>([](long x) { return static_cast<int>(x); }));
#endif
}
int main() {
  (void)&body;
}
