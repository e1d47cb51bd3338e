// Starting and stopping a node, its kernel process, and its table of connections.
#include <beamlet/core/detail/core.hpp>
#include <beamlet/core/detail/scheduler_io.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/dist/node.hpp>
#include <beamlet/observe/metrics.hpp>

#include <unistd.h>

#include <sys/stat.h>
#include <fstream>
#include <random>
#include <thread>

#include "console_nodes.hpp"
#include "epmd.hpp"
#include "node_state.hpp"
#include "node_table.hpp"
#include "wire.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist {

namespace detail {

namespace core = beamlet::detail;

void node_state::attached(core::runtime_core& rt) {
  rt_ = &rt;
  core::add_metrics_collector(rt, "dist", [this](metrics_writer& w) {
    w.family(
        "dist_outbox_bytes", "gauge",
        "Bytes waiting to be written to a connected node (busy past node_options::busy_limit).");
    {
      std::shared_lock lock(mu);
      for (const auto& [name, e] : conns) {
        std::size_t n = 0;
        {
          std::lock_guard box_lock(e.box->mu);
          n = e.box->unwritten();
        }
        w.sample("dist_outbox_bytes", n, metrics_writer::label("node", name));
      }
    }
    w.family("dist_busy_pauses_total", "counter",
             "Processes suspended because they sent to a busy connection (busy_dist_port).");
    w.sample("dist_busy_pauses_total", busy_pauses.load(std::memory_order_relaxed));
  });
}

void node_state::stopping() noexcept {
  core::remove_metrics_collector(*rt_, "dist");
  set_running(false);
  core::install_hook(*rt_, static_cast<core::remote_hooks*>(nullptr));
  // The listener belongs to the network layer's I/O engine, another extension, which may be
  // destroyed before this one (when the program used the network before dist::start): let
  // it go while every extension is still there.
  listener.close();
  listener = net::tcp_listener();
}

void node_state::log(log_level level, std::string message) const noexcept {
  try {
    if (!core::report_enabled(*rt_, level)) return;
    log_event e;
    e.level = level;
    e.time = std::chrono::system_clock::now();
    e.message = std::move(message);
    core::emit_event(*rt_, std::move(e));
  } catch (...) {
  }
}

std::string node_state::cookie_for(const std::string& peer) {
  std::shared_lock lock(mu);
  if (auto it = node_cookies.find(peer); it != node_cookies.end()) return it->second;
  return cookie;
}

pid node_state::ensure_connection_locked(const std::string& node) {
  if (!running() || node == self.name) return pid();
  if (auto it = conns.find(node); it != conns.end()) return it->second.process;
  node_state* st = this;
  auto box = std::make_shared<outbox>();
  const pid c = core::spawn_body(
      *rt_, nullptr, [st, node, box](process& p) { return connection_body(p, *st, node, box); }, {},
      nullptr);
  conns[node] = conn_entry{c, false, 0, std::move(box)};
  return c;
}

// -- backpressure --------------------------------------------------------------------------

outbox::~outbox() {
  // Pauses still held when the node goes away with the runtime: their processes are ending.
  for (auto& [who, t] : paused) beamlet::detail::destroy_node(t.resume);
  for (auto& [who, l] : fragmenting)
    if (l.pause.resume != nullptr) beamlet::detail::destroy_node(l.pause.resume);  // paused ones
}

outbox::pause_map outbox::settle_locked(std::size_t low, bool force) {
  if (!busy || (!force && pending() > low)) return {};
  pause_map out = std::exchange(paused, {});  // allocates nothing, so nothing is lost
  busy = false;
  drained.notify_all();
  return out;
}

void resume_all(core::runtime_core& rt, outbox::pause_map ts) {
  for (const auto& [who, t] : ts) core::remote_resume(rt, t);
}

node_state::deposited node_state::deposit(outbox& box, pid conn, std::string_view bytes,
                                          out_command* cmd, bool message, pid sender,
                                          std::string* owned) {
  std::unique_lock lock(box.mu);
  if (box.closed) return deposited::no;
  // A packet is its 4-byte length, the distribution header (131 'D' 0) and the terms.
  constexpr std::size_t head = 4 + sizeof whole_header;
  // (bytes may be moved from below; a command's splices count as its bytes do)
  const std::size_t size = cmd != nullptr ? cmd->size() : bytes.size();
  const bool large = opts.fragment_size != 0 && size > head + opts.fragment_size;
  if (cmd == nullptr && !large && box.fragmenting.empty()) {
    box.bytes.append(bytes);  // the common case: no sender to keep behind fragments
    box.queued += size;
  } else {
    out_command own;
    if (cmd == nullptr) {
      if (large && owned != nullptr)
        own.bytes = std::move(*owned);  // no copy of a large message
      else
        own.bytes.assign(bytes);
      own.local = sender ? sender : core::acting_process(*rt_);
      cmd = &own;
    }
    box.ops.reserve(box.ops.size() + 1);  // so that the push_back below cannot throw
    if (large) {
      auto [it, fresh] = box.fragmenting.try_emplace(cmd->local);
      // The sending process goes no further until its large message is written (what it sent
      // before the pause takes hold is kept behind the fragments by the connection).
      if (fresh && message && cmd->local == core::running_process(*rt_))
        it->second.pause = core::remote_pause_running(*rt_);
      ++it->second.messages;
      cmd->large = true;
      cmd->exempt = static_cast<bool>(it->second.pause.who);
    }
    (cmd->exempt ? box.large : box.queued) += size;
    box.ops.push_back(outbox::op{box.bytes.size(), std::move(*cmd)});
  }
  const bool wake = !box.woken;
  box.woken = true;
  const std::size_t limit = opts.busy_limit;
  if (limit != 0 && !box.busy && box.pending() > limit) box.busy = true;
  pid paused;
  bool wait = false;
  if (box.busy && message) {
    // OTP suspends a process that sends to a busy distribution port. The message is queued
    // all the same: nothing is dropped, the sender just goes no further until the drain.
    if (const pid me = core::running_process(*rt_)) {
      // The entry first (it may throw, and then no pause is taken), the pause into it.
      if (auto [it, fresh] = box.paused.try_emplace(me); fresh) {
        it->second = core::remote_pause_running(*rt_);
        if (it->second.who)
          paused = me;
        else
          box.paused.erase(it);
      }
    } else if (core::current_scheduler(*rt_) < 0) {
      wait = true;  // an outside thread: it may block (a scheduler thread never does)
    }
  }
  lock.unlock();
  if (wake) core::send_node(*rt_, conn, core::make_message(outbox_ready{}));
  if (paused) {
    busy_pauses.fetch_add(1, std::memory_order_relaxed);
    core::remote_busy_alarm(*rt_, paused, conn);
  }
  return wait ? deposited::wait : deposited::yes;
}

void node_state::wait_drained(outbox& box) {
  std::unique_lock lock(box.mu);
  box.drained.wait_for(lock, opts.net_ticktime, [&] { return !box.busy || box.closed; });
}

bool node_state::deposit_to(std::string_view node, std::string_view bytes, out_command* cmd,
                            bool message, pid sender, std::string* owned) {
  // The deposit is made under `mu`, shared for a connection in the table, exclusive for one we
  // start: a connection leaves the table (under `mu`, exclusively) before it closes its outbox,
  // so a box found in the table takes the command, and a connection that then fails answers it
  // with noconnection. (Looking it up, letting go of `mu` and depositing afterwards could find
  // the box closed by a connection that failed in between, however often it was tried.)
  std::shared_ptr<outbox> box;
  deposited d = deposited::no;
  bool found = false;
  {
    std::shared_lock lock(mu);
    if (!running()) return false;
    if (auto it = conns.find(node); it != conns.end()) {
      found = true;
      d = deposit(*it->second.box, it->second.process, bytes, cmd, message, sender, owned);
      if (d == deposited::wait) box = it->second.box;
    }
  }
  if (!found) {
    std::unique_lock lock(mu);
    const pid conn = ensure_connection_locked(std::string(node));
    if (!conn) return false;
    const conn_entry& e = conns.find(node)->second;
    d = deposit(*e.box, conn, bytes, cmd, message, sender, owned);
    if (d == deposited::wait) box = e.box;
  }
  if (box) wait_drained(*box);  // with no lock held: the drain needs `mu` to end a connection
  return d != deposited::no;
}

bool node_state::post(std::string_view node, out_command&& cmd, bool message) {
  // A plain packet needs no bookkeeping: it joins the bytes (one with splices is kept whole).
  const bool plain = cmd.what == out_command::kind::packet && cmd.splices.empty();
  return deposit_to(node, cmd.bytes, plain ? nullptr : &cmd, message, cmd.local,
                    plain ? &cmd.bytes : nullptr);
}

bool node_state::post_bytes(std::string_view node, std::string& packet) {
  return deposit_to(node, packet, nullptr, true, pid(), &packet);
}

void node_state::post_stop(const std::string& node, std::string why) {
  std::shared_lock lock(mu);
  if (auto it = conns.find(node); it != conns.end())
    core::send_node(*rt_, it->second.process, core::make_message(conn_stop{std::move(why)}));
}

bool node_state::is_visible(std::string_view node) {
  std::shared_lock lock(mu);
  auto it = conns.find(node);
  return it != conns.end() && it->second.established && it->second.visible;
}

void node_state::node_event(const std::string& node, bool up, bool was_up) {
  std::unique_lock lock(mu);
  // monitor_nodes: nodeup when a connection is made, nodedown only for one that was up.
  if (up || was_up) {
    for (pid w : all_nodes_watchers) {
      if (up)
        core::send_node(*rt_, w, core::make_message(nodeup{node}));
      else
        core::send_node(*rt_, w, core::make_message(nodedown{node}));
    }
  }
  if (up) return;
  // monitor_node fires once per call, also when the connection could not be made.
  std::erase_if(node_watchers, [&](const std::pair<pid, std::string>& w) {
    if (w.second != node) return false;
    core::send_node(*rt_, w.first, core::make_message(nodedown{node}));
    return true;
  });
}

// -- the kernel -------------------------------------------------------------------------------

task<> kernel_body(process& self, node_state& node, net::tcp_listener listener, pid starter) {
  registration reg;
  if (node.opts.use_epmd) {
    std::string alive = node.self.name.substr(0, node.self.name.find('@'));
    auto r =
        co_await epmd_register(self, std::move(alive), node.port, epmd_port(node.opts.epmd_port),
                               node.opts.connect_timeout, node.opts.hidden);
    if (!r) {
      self.send(starter, kernel_ready{0, r.error()});
      co_return;
    }
    reg = std::move(*r);
  } else {
    reg.creation = static_cast<std::uint32_t>(std::random_device{}() | 1u);
  }
  // Erlang nodes monitor and call `net_kernel` on connecting (net_adm:ping): the name must
  // resolve; the connection answers its is_auth calls.
  (void)self.register_name("net_kernel");
  self.send(starter, kernel_ready{reg.creation, {}});
  auto go = co_await self.receive(on<kernel_go>(), after(std::chrono::seconds(30)));
  if (!go) co_return;
  for (;;) {
    auto s = co_await net::accept(self, listener);
    if (!s) {
      if (listener.closed()) co_return;  // stop(): reg's socket closes with us (unregistered)
      co_await self.sleep(std::chrono::milliseconds(10));  // EMFILE and the like: back off
      continue;
    }
    node_state* st = &node;
    const pid c =
        self.spawn([st](process& p) { return connection_body(p, *st, std::string(), nullptr); });
    auto handed = co_await net::controlling_process(self, *s, c);
    (void)handed;
  }
}

}  // namespace detail

// -- the public API ---------------------------------------------------------------------------

namespace {

namespace core = beamlet::detail;

std::string host_name(bool long_names) {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  std::string h(buf);
  if (!long_names) h = h.substr(0, h.find('.'));
  return h;
}

expected<std::string, std::error_code> default_cookie() {
  const char* home = std::getenv("HOME");
  if (home == nullptr) return unexpected(std::error_code(dist_errc::no_cookie));
  const std::string path = std::string(home) + "/.erlang.cookie";
  std::ifstream in(path);
  std::string c;
  if (in && std::getline(in, c) && !c.empty()) return c;
  // As erl does: make one, readable by the owner only.
  std::random_device rd;
  for (int i = 0; i < 20; ++i) c.push_back(static_cast<char>('A' + rd() % 26));
  std::ofstream out(path);
  if (!out) return unexpected(std::error_code(dist_errc::no_cookie));
  out << c;
  out.close();
  ::chmod(path.c_str(), 0400);
  return c;
}

bool valid_alive(std::string_view a) {
  if (a.empty() || a.size() > 255) return false;
  for (char ch : a)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-')) return false;
  return true;
}

}  // namespace

expected<node_info, std::error_code> start(runtime& rt, node_options opts) {
  auto& st = extension<detail::node_state>(rt);
  if (st.running()) return unexpected(std::error_code(dist_errc::already_started));
  std::string name = opts.name;
  if (name.find('@') == std::string::npos) name += "@" + host_name(opts.long_names);
  const auto at = name.find('@');
  if (!valid_alive(name.substr(0, at)) || at + 1 >= name.size())
    return unexpected(std::error_code(dist_errc::bad_name));
  const bool has_dot = name.find('.', at) != std::string::npos;
  if (opts.long_names != has_dot && name.substr(at + 1) != "localhost")
    return unexpected(std::error_code(dist_errc::bad_name));
  if (opts.cookie.empty()) {
    auto c = default_cookie();
    if (!c) return unexpected(c.error());
    opts.cookie = *c;
  }
  if (!opts.use_epmd && opts.port == 0) return unexpected(std::error_code(dist_errc::bad_options));
  if (opts.net_ticktime.count() <= 0 || opts.handshake_timeout.count() <= 0)
    return unexpected(std::error_code(dist_errc::bad_options));
  // Fragments so small that their headers would outweigh them are a mistake, not a setting.
  if (opts.fragment_size != 0 && opts.fragment_size < 1024)
    return unexpected(std::error_code(dist_errc::bad_options));
  std::shared_ptr<detail::tls_context> tls;
  if (opts.tls) {
    if (!detail::tls_built()) return unexpected(std::error_code(dist_errc::tls_unavailable));
    auto t = detail::tls_context::make(*opts.tls);
    if (!t) {
      st.log(log_level::error, "distribution: TLS: " + t.error());
      return unexpected(std::error_code(dist_errc::tls_setup));
    }
    tls = std::move(*t);
  }
  net::listen_options lo;
  lo.address = opts.listen_address;
  lo.port = opts.port;
  auto l = net::listen(rt, lo);
  if (!l) return unexpected(l.error());
  st.opts = opts;
  st.tls = std::move(tls);
  st.cookie = opts.cookie;
  st.port = l->port();
  st.self.name = name;
  st.listener = *l;
  scoped_process me(rt);
  detail::node_state* sp = &st;
  const pid starter = me.self();
  net::tcp_listener listener = *l;
  st.kernel = me.spawn([sp, listener, starter](process& p) {
    return detail::kernel_body(p, *sp, listener, starter);
  });
  auto ready =
      me.receive(on<detail::kernel_ready>(), after(opts.connect_timeout + std::chrono::seconds(5)));
  if (!ready || ready.get<detail::kernel_ready>().creation == 0) {
    l->close();
    return unexpected(ready ? ready.get<detail::kernel_ready>().error
                            : std::error_code(dist_errc::timed_out));
  }
  st.self.creation = ready.get<detail::kernel_ready>().creation;
  st.rex = me.spawn([sp](process& p) { return detail::rex_body(p, *sp); });
  st.group_leader = me.spawn([sp](process& p) { return detail::group_leader_body(p, *sp); });
  {
    // A join that raced the last stop() may have left something behind.
    std::unique_lock lock(st.pg.mu);
    st.pg.clear();
  }
  st.pg_scope = me.spawn([sp](process& p) { return detail::pg_body(p, *sp); });
  {
    std::unique_lock lock(st.global.mu);
    st.global.clear();
  }
  st.global_server =
      opts.hidden ? pid() : me.spawn([sp](process& p) { return detail::global_body(p, *sp); });
  core::install_hook(rt.core(), &st);
  st.set_running(true);
  detail::add_console_nodes(rt);
  me.send(st.kernel, detail::kernel_go{});
  return node_info{st.self.name, st.self.creation, st.port};
}

bool stop(runtime& rt) {
  auto& st = extension<detail::node_state>(rt);
  if (!st.running()) return false;
  detail::remove_console_nodes(rt);
  st.set_running(false);
  st.listener.close();
  rt.exit(st.rex, exit_reason::kill());
  rt.exit(st.group_leader, exit_reason::kill());
  rt.exit(st.pg_scope, exit_reason::kill());
  if (st.global_server) rt.exit(st.global_server, exit_reason::kill());  // its locker is linked
  {
    std::unique_lock lock(st.pg.mu);
    st.pg.clear();
  }
  {
    std::unique_lock lock(st.global.mu);
    st.global.clear();
  }
  {
    std::shared_lock lock(st.mu);
    for (const auto& [name, e] : st.conns)
      core::send_node(rt.core(), e.process, core::make_message(detail::conn_stop{"node stopped"}));
  }
  // Wait for the connections to close (each answers its links and monitors with noconnection).
  for (int i = 0; i < 500; ++i) {
    {
      std::shared_lock lock(st.mu);
      if (st.conns.empty()) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int i = 0;
       i < 500 && (rt.is_alive(st.kernel) || rt.is_alive(st.rex) || rt.is_alive(st.pg_scope) ||
                   (st.global_server && rt.is_alive(st.global_server)));
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return true;
}

std::optional<node_info> self(runtime& rt) {
  auto& st = extension<detail::node_state>(rt);
  if (!st.running()) return std::nullopt;
  return node_info{st.self.name, st.self.creation, st.port};
}

std::optional<node_info> self(basic_process& p) {
  auto& st = extension<detail::node_state>(p);
  if (!st.running()) return std::nullopt;
  return node_info{st.self.name, st.self.creation, st.port};
}

std::vector<std::string> nodes(runtime& rt) {
  return nodes(rt, node_kind::connected);
}

std::vector<std::string> nodes(runtime& rt, node_kind kind) {
  auto& st = extension<detail::node_state>(rt);
  std::vector<std::string> out;
  std::shared_lock lock(st.mu);
  for (const auto& [name, e] : st.conns)
    if (e.established &&
        (kind == node_kind::connected || e.visible == (kind == node_kind::visible)))
      out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::size_t> outbox_bytes(runtime& rt, std::string_view node) {
  auto& st = extension<detail::node_state>(rt);
  std::shared_lock lock(st.mu);
  auto it = st.conns.find(node);
  if (it == st.conns.end()) return std::nullopt;
  std::lock_guard box_lock(it->second.box->mu);
  return it->second.box->unwritten();
}

task<bool> connect_node(process& self, std::string node) {
  auto& st = extension<detail::node_state>(self);
  const pid me = self.self();
  {
    std::unique_lock lock(st.mu);
    if (auto it = st.conns.find(node); it != st.conns.end() && it->second.established)
      co_return true;
    if (!st.ensure_connection_locked(node)) co_return false;
    // nodeup when it is made, nodedown (one-shot) when it cannot be.
    st.all_nodes_watchers.push_back(me);
    st.node_watchers.emplace_back(me, node);
  }
  const auto mine = [&node](const nodeup& u) { return u.node == node; };
  const auto gone = [&node](const nodedown& d) { return d.node == node; };
  const auto limit = st.opts.connect_timeout + st.opts.handshake_timeout;
  auto m = co_await self.receive(on<nodeup>().when(mine), on<nodedown>().when(gone), after(limit));
  {
    std::unique_lock lock(st.mu);
    std::erase(st.all_nodes_watchers, me);
    auto it = std::find(st.node_watchers.begin(), st.node_watchers.end(),
                        std::pair<pid, std::string>{me, node});
    if (it != st.node_watchers.end()) st.node_watchers.erase(it);
  }
  co_return m&& m.is<nodeup>();
}

bool disconnect_node(runtime& rt, std::string_view node) {
  auto& st = extension<detail::node_state>(rt);
  const std::string name(node);
  bool was_up = false;
  {
    // Out of the table at once, its outbox closed: whatever is sent from now on goes to a new
    // connection (what was sent before still goes out on this one, as it ends).
    std::unique_lock lock(st.mu);
    auto it = st.conns.find(name);
    // As OTP: only a connection that is up is disconnected. One still being set up is left to
    // finish (what is sent meanwhile waits in it): cutting it would leave the peer holding a
    // half-made connection that refuses the next attempt (a simultaneous-connect "nok").
    if (it == st.conns.end() || !it->second.established) return false;
    was_up = true;
    if (const auto& box = it->second.box) {
      std::lock_guard b(box->mu);
      box->closed = true;
    }
    core::send_node(rt.core(), it->second.process,
                    core::make_message(detail::conn_stop{"disconnect_node"}));
    st.conns.erase(it);
  }
  st.node_event(name, false, was_up);
  return true;
}

void set_cookie(runtime& rt, std::string cookie) {
  auto& st = extension<detail::node_state>(rt);
  std::unique_lock lock(st.mu);
  st.cookie = std::move(cookie);
}

void set_cookie(runtime& rt, std::string_view node, std::string cookie) {
  auto& st = extension<detail::node_state>(rt);
  std::unique_lock lock(st.mu);
  st.node_cookies[std::string(node)] = std::move(cookie);
}

std::string get_cookie(runtime& rt, std::string_view node) {
  return extension<detail::node_state>(rt).cookie_for(std::string(node));
}

std::string get_cookie(runtime& rt) {
  auto& st = extension<detail::node_state>(rt);
  std::shared_lock lock(st.mu);
  return st.cookie;
}

void monitor_node(basic_process& self, std::string_view node, bool on) {
  auto& st = extension<detail::node_state>(self);
  const std::string n(node);
  std::unique_lock lock(st.mu);
  if (!on) {
    auto it = std::find(st.node_watchers.begin(), st.node_watchers.end(),
                        std::pair<pid, std::string>{self.self(), n});
    if (it != st.node_watchers.end()) st.node_watchers.erase(it);
    return;
  }
  if (!st.ensure_connection_locked(n)) {
    self.send(self.self(), nodedown{n});
    return;
  }
  st.node_watchers.emplace_back(self.self(), n);
}

void monitor_nodes(basic_process& self, bool on) {
  auto& st = extension<detail::node_state>(self);
  std::unique_lock lock(st.mu);
  if (on)
    st.all_nodes_watchers.push_back(self.self());
  else
    std::erase(st.all_nodes_watchers, self.self());
}

std::string node_name(runtime& rt, pid p) {
  if (p.is_remote()) {
    auto n = node_of(p);
    return n ? n->name : std::string();
  }
  auto& st = extension<detail::node_state>(rt);
  return st.running() ? st.self.name : std::string("nonode@nohost");
}

}  // namespace dist
BEAMLET_END_PRIVATE_NAMESPACE
