// received<...>::get_if<T> for a T that no clause of the receive can match does not compile.
#include <beamlet/beamlet.hpp>

beamlet::task<> body(beamlet::process& self) {
  auto m = co_await self.receive(beamlet::on<int>());
#ifdef BEAMLET_COMPILE_FAIL
  (void)m.get_if<double>();
#else
  (void)m.get_if<int>();
#endif
}
int main() {
  (void)&body;
}
