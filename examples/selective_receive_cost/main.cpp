// selective_receive_cost: why a supervisor with a long mailbox melts down, and the fix.
//
// A supervisor-like process holds N queued "start child" requests. For each request it spawns a
// child and waits for the child's acknowledgement with a selective receive, as OTP's proc_lib
// does. Two ways to wait:
//
//  * scan   - the receive is keyed on the child's pid (OTP 25-27 proc_lib): it cannot know that
//             the ack is newer than the backlog, so it examines every queued request first.
//             Each start costs O(N); draining the backlog costs O(N^2).
//  * marker - the receive is keyed on a ref made just before the spawn, with a receive marker:
//             it starts after the backlog. Each start costs O(1) (erlang/otp PR #11633).
//
// Both give the same result; only the cost differs. Run:
//   build-dev/examples/selective_receive_cost/selective_receive_cost [--quick] [--help]
// A full run (up to 1M queued) takes about a minute; --quick (up to 100k) a few seconds.
#include <beamlet/beamlet.hpp>

#include <chrono>
#include <cstdio>
#include <string_view>
#include <vector>

using namespace beamlet;
using namespace std::chrono_literals;

namespace {

struct start_request {
  int n;
};
struct go {};
struct ack {  // scan mode: the child says "I am up", identified by its pid
  pid child;
};
struct tagged_ack {  // marker mode: the child echoes the ref the parent made
  ref tag;
};

enum class mode { scan, marker };

struct result {
  double us_per_start = 0;
  double examined_per_start = 0;
};

// Times `starts` child starts behind a backlog of `queued` requests.
result measure(runtime& rt, mode m, int queued, int starts) {
  result out;
  const int total = queued + starts;
  const pid sup = rt.spawn([&out, m, starts](process& self) -> task<> {
    co_await self.receive(on<go>());
    const pid me = self.self();
    const auto t0 = std::chrono::steady_clock::now();
    const std::uint64_t examined0 = self.messages_examined();
    for (int i = 0; i < starts; ++i) {
      co_await self.receive(on<start_request>());  // the oldest request: O(1)
      if (m == mode::scan) {
        const pid child = self.spawn([me](process& c) -> task<> {
          c.send(me, ack{c.self()});
          co_return;
        });
        co_await self.receive(on<ack>().when([child](const ack& a) { return a.child == child; }));
      } else {
        const ref r = self.make_ref(marked);
        self.spawn([me, r](process& c) -> task<> {
          c.send(me, tagged_ack{r});
          co_return;
        });
        co_await self.receive(
            since(r), on<tagged_ack>().when([r](const tagged_ack& a) { return a.tag == r; }));
      }
    }
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    out.us_per_start = us / starts;
    out.examined_per_start = static_cast<double>(self.messages_examined() - examined0) / starts;
  });
  // A client floods the supervisor with requests before it starts working through them.
  rt.spawn([sup, total](process& self) -> task<> {
    for (int i = 0; i < total; ++i) self.send(sup, start_request{i});
    self.send(sup, go{});
    co_return;
  });
  rt.wait(sup, std::chrono::minutes(10));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else {
      std::fputs(
          "usage: selective_receive_cost [--quick] [--help]\n"
          "  times child starts behind 0..1M queued requests with each ack wait (about a\n"
          "  minute); --quick stops at 100k (a few seconds)\n",
          a == "--help" ? stdout : stderr);
      return a == "--help" ? 0 : 2;
    }
  }
  const std::vector<int> depths = quick ? std::vector<int>{0, 1000, 10000, 100000}
                                        : std::vector<int>{0, 1000, 10000, 100000, 300000, 1000000};
  const int starts = quick ? 50 : 100;

  runtime rt;
  std::printf("beamlet: cost of one child start behind a backlog of queued start requests\n");
  std::printf("(%d starts timed per row; %u scheduler threads)\n\n", starts, rt.schedulers());
  std::printf("%10s | %14s %12s | %14s %12s | %9s\n", "queued", "scan us/start", "examined",
              "marker us/start", "examined", "scan/mark");
  std::printf(
      "-----------+-----------------------------+------------------------------+----------\n");
  double slope_num = 0, slope_den = 0;
  double last_scan = 0;
  for (int q : depths) {
    const result s = measure(rt, mode::scan, q, starts);
    const result k = measure(rt, mode::marker, q, starts);
    std::printf("%10d | %14.2f %12.0f | %15.2f %12.0f | %8.1fx\n", q, s.us_per_start,
                s.examined_per_start, k.us_per_start, k.examined_per_start,
                s.us_per_start / k.us_per_start);
    if (q > 0) {
      slope_num += s.us_per_start * 1000.0 / q;
      slope_den += 1;
    }
    last_scan = s.us_per_start;
  }
  const double ns_per_queued = slope_den > 0 ? slope_num / slope_den : 0;
  std::printf(
      "\nscan: about %.1f ns per queued message per start (O(n) per start, O(n^2) to drain)\n",
      ns_per_queued);
  std::printf("marker: flat; the ack wait never looks at the backlog\n");
  std::printf(
      "at %d queued, scan allows at most %.0f starts/s; BEAM (OTP 25) measured 14.6 ms "
      "per start at 1M queued (68 starts/s)\n",
      depths.back(), last_scan > 0 ? 1e6 / last_scan : 0.0);
  return 0;
}
