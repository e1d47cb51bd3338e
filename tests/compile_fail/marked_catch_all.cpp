// spec §1.3 rule 15: a receive marked with since(ref) must not have a catch-all clause.
#include <beamlet/beamlet.hpp>

beamlet::task<> body(beamlet::process& self) {
  const beamlet::ref r = self.make_ref(beamlet::marked);
#ifdef BEAMLET_COMPILE_FAIL
  co_await self.receive(beamlet::since(r), beamlet::on_any());
#else
  co_await self.receive(beamlet::since(r), beamlet::on<int>());
#endif
}
int main() {
  (void)&body;
}
