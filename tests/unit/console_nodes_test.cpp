// The console's Nodes view (beamlet/dist adds it while a node runs): the connected nodes, and
// an Elixir node's processes with the longest queues read over distribution, nothing loaded on
// the Elixir side. Driven by a real HTTP client (tests/http/console_check.py).
#include <beamlet/dist/node.hpp>
#include <beamlet/observe/http_endpoint.hpp>

#include <string>

#include "erl_node.hpp"
#include "http_client.hpp"
#include "test_support.hpp"

namespace beamlet::test {
namespace console_nodes_cases {

using dist::term;

TEST(ConsoleNodes, AnElixirNodesLongestQueues) {
  if (!elixir_available()) GTEST_SKIP() << "elixir is not installed: skipped";
  runtime rt;
  http_endpoint_options o;
  o.console = true;
  auto ep = http_endpoint::start(rt, o);
  ASSERT_TRUE(ep);
  // Before the node starts, there is no Nodes view.
  EXPECT_EQ(run_client("console_nodes_off " + std::to_string(ep->port())).status, 0);

  const auto node = start_node(rt, "console");
  ASSERT_FALSE(node.name.empty());
  // An Elixir node with a process that never takes its 1,500 messages.
  erl_node ex("console_ex", test_cookie(), true,
              "pid = spawn(fn -> Process.register(self(), :backlogged)\n"
              "  receive do :never -> :ok end end)\n"
              "Process.sleep(100)\n"
              "for i <- 1..1500, do: send(:backlogged, i)\n");
  scoped_process me(rt);
  ASSERT_TRUE(ex.wait_up(me));
  const auto r = run_client("console_nodes " + std::to_string(ep->port()) + " " + ex.name());
  EXPECT_EQ(r.status, 0) << r.out;

  // Stopped, the node takes its view away.
  ASSERT_TRUE(dist::stop(rt));
  EXPECT_EQ(run_client("console_nodes_off " + std::to_string(ep->port())).status, 0);
}

}  // namespace console_nodes_cases
}  // namespace beamlet::test
