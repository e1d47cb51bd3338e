// The core's remote hooks: what a local process does to a remote pid, encoded on its own
// thread and handed to the connection for that pid's node (node_state.hpp).
#include <beamlet/core/detail/core.hpp>
#include <beamlet/dist/node.hpp>

#include "node_state.hpp"
#include "node_table.hpp"
#include "wire.hpp"

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

namespace core = beamlet::detail;

// -- the hooks --------------------------------------------------------------------------------

namespace {
term atom_of(std::string_view s) {
  return term::make_atom(std::string(s));
}
}  // namespace

bool node_state::packet_to(pid to, out_command::kind what, pid local, const term& control,
                           const term* message, std::uint64_t ref) {
  if (!running()) return false;
  const node_incarnation* node = node_entry(to.node_slot());
  if (node == nullptr) return false;
  out_command c;
  c.what = what;
  c.local = local;
  c.remote = to;
  c.ref = ref;
  if (auto r = append_packet(c.bytes, control, message, self); !r) {
    log(log_level::error, "distribution: a signal to " + to.to_string() +
                              " cannot be encoded, so it is not sent: " + r.error());
    return true;
  }
  return post(node->name, std::move(c));
}

core::send_status node_state::send(pid to, core::message_node* n) noexcept {
  core::node_ptr owned(n);
  if (!running()) return core::send_status::no_process;
  try {
    std::optional<term> t = message_term(n);
    if (!t) {
      log(log_level::error,
          "distribution: a message of type " + core::demangled_name(*n->type->type) + " sent to " +
              to.to_string() + " was dropped: the type has no term mapping (register_message)");
      return core::send_status::refused;
    }
    const node_incarnation* node = node_entry(to.node_slot());
    if (node == nullptr) return core::send_status::no_process;
    // The hot path: SEND's control tuple {2, '', To} written directly, then the message, into
    // this thread's scratch buffer; the outbox takes a copy of the bytes. Large binaries are
    // left out (splice.hpp): the connection writes them from the message's own binaries.
    thread_local std::string scratch;
    scratch.clear();
    scratch.append(4, '\0');
    scratch.append(whole_header, sizeof whole_header);
    static constexpr char send_head[] = {'\x68', '\x03', '\x61', '\x02', '\x77', '\x00'};
    scratch.append(send_head, sizeof send_head);
    auto r = encode(term(to), scratch, &self, false);
    splice_list splices;
    if (r) r = encode_spliced(*t, scratch, &self, splices);
    if (!r) {
      // Refused here rather than sent: the peer would drop the whole connection over it.
      log(log_level::error, "distribution: a message to " + to.to_string() +
                                " cannot be encoded, so it is not sent: " + r.error());
      return core::send_status::refused;
    }
    end_packet(scratch, 0, spliced_size(splices));
    bool posted = false;
    if (splices.empty()) {
      posted = post_bytes(node->name, scratch);
    } else {
      out_command c;
      c.local = core::acting_process(*rt_);  // what orders it among the sender's signals
      c.bytes = scratch;
      c.splices = std::move(splices);
      posted = post(node->name, std::move(c), /*message=*/true);
    }
    // A large message leaves no large buffer behind it on this thread.
    if (scratch.capacity() > (std::size_t{1} << 20)) std::string().swap(scratch);
    return posted ? core::send_status::queued : core::send_status::no_process;
  } catch (...) {
    return core::send_status::queued;  // out of memory: lost, as a message to a process that cannot
                                       // take it
  }
}

void node_state::send_named(pid from, std::string_view name, std::string_view node,
                            core::message_node* n) noexcept {
  core::node_ptr owned(n);
  if (!running()) return;
  try {
    std::optional<term> t = message_term(n);
    if (!t) {
      log(log_level::error, "distribution: a message of type " +
                                core::demangled_name(*n->type->type) +
                                " has no term mapping (register_message): dropped");
      return;
    }
    const std::string target(node);
    if (target == self.name) {  // {Name, node()} ! Msg is a local send
      (void)core::send_node_named(*rt_, name, core::make_message(std::move(*t)));
      return;
    }
    out_command c;
    c.local = from;  // what orders it among from's signals
    const term control =
        term::make_tuple({term(ctl::reg_send), term(from), atom_of(""), atom_of(name)});
    if (auto r = append_packet(c.bytes, control, &*t, self, &c.splices))
      post(target, std::move(c), /*message=*/true);
    else
      log(log_level::error, "distribution: a message to {" + std::string(name) + ", " + target +
                                "} cannot be encoded, so it is not sent: " + r.error());
  } catch (...) {
  }
}

bool node_state::link(pid from, pid to) noexcept {
  try {
    return packet_to(to, out_command::kind::link, from,
                     term::make_tuple({term(ctl::link), term(from), term(to)}), nullptr);
  } catch (...) {
    return false;
  }
}

void node_state::unlink(pid from, pid to) noexcept {
  try {
    static std::atomic<std::uint64_t> ids{1};
    packet_to(to, out_command::kind::unlink, from,
              term::make_tuple({term(ctl::unlink_id), term(static_cast<std::int64_t>(ids++)),
                                term(from), term(to)}),
              nullptr);
  } catch (...) {
  }
}

bool node_state::exit(pid from, pid to, const exit_reason& reason, bool via_link) noexcept {
  try {
    const term control = term::make_tuple(
        {term(via_link ? ctl::exit : ctl::exit2), term(from), term(to), reason_to_term(reason)});
    return packet_to(to, via_link ? out_command::kind::link_exit : out_command::kind::packet, from,
                     control, nullptr);
  } catch (...) {
    return false;
  }
}

bool node_state::monitor(pid watcher, pid target, std::uint64_t ref) noexcept {
  try {
    const term control =
        term::make_tuple({term(ctl::monitor_p), term(watcher), term(target), ref_term(ref, self)});
    return packet_to(target, out_command::kind::monitor, watcher, control, nullptr, ref);
  } catch (...) {
    return false;
  }
}

pid node_state::monitor_named(pid watcher, std::string_view name, std::string_view node,
                              std::uint64_t ref) noexcept {
  try {
    if (!running()) return pid();
    const std::uint32_t slot = intern_pinned(node, 0);
    if (slot == 0) return pid();
    const pid stand_in = pid::remote(slot, 0);
    out_command c;
    c.what = out_command::kind::monitor;
    c.local = watcher;
    c.remote = stand_in;
    c.ref = ref;
    c.name = std::string(name);
    const term control =
        term::make_tuple({term(ctl::monitor_p), term(watcher), atom_of(name), ref_term(ref, self)});
    if (!append_packet(c.bytes, control, nullptr, self) || !post(node, std::move(c))) return pid();
    return stand_in;
  } catch (...) {
    return pid();
  }
}

void node_state::demonitor(pid watcher, pid target, std::uint64_t ref) noexcept {
  try {
    // A monitor by name is withdrawn by name: the stand-in pid carries none.
    const term control = term::make_tuple(
        {term(ctl::demonitor_p), term(watcher), term(target), ref_term(ref, self)});
    packet_to(target, out_command::kind::demonitor, watcher, control, nullptr, ref);
  } catch (...) {
  }
}

void node_state::down(pid watcher, pid target, std::uint64_t ref,
                      const exit_reason& reason) noexcept {
  try {
    const std::optional<node_incarnation> node = node_of(watcher);
    if (!node || !running()) return;
    out_command c;
    c.what = out_command::kind::down;
    c.local = target;
    c.remote = watcher;
    c.ref = ref;
    c.reason = reason;
    post(node->name, std::move(c));
  } catch (...) {
  }
}

// -- message types ----------------------------------------------------------------------------

namespace {
struct encoder_registry {
  std::shared_mutex mu;
  std::unordered_map<const core::type_descriptor*, encode_fn> by_type;
};
template <class T>
term encode_as(core::message_node* n) {
  return dist::to_term(core::payload<T>(n));
}
encoder_registry& encoders() {
  static encoder_registry* r = [] {
    auto* reg = new encoder_registry;  // never destroyed: senders may run during exit
    reg->by_type[core::tag_of<std::string>()] = &encode_as<std::string>;
    // A string literal sent as it is (send(p, "hello")): a binary, as std::string.
    reg->by_type[core::tag_of<const char*>()] = [](core::message_node* n) {
      const char* s = core::payload<const char*>(n);
      return term::make_binary(s != nullptr ? s : "");
    };
    reg->by_type[core::tag_of<int>()] = &encode_as<int>;
    reg->by_type[core::tag_of<long>()] = &encode_as<long>;
    reg->by_type[core::tag_of<long long>()] = &encode_as<long long>;
    reg->by_type[core::tag_of<unsigned>()] = &encode_as<unsigned>;
    reg->by_type[core::tag_of<unsigned long>()] = &encode_as<unsigned long>;
    reg->by_type[core::tag_of<double>()] = &encode_as<double>;
    reg->by_type[core::tag_of<bool>()] = &encode_as<bool>;
    reg->by_type[core::tag_of<atom>()] = &encode_as<atom>;
    reg->by_type[core::tag_of<pid>()] = &encode_as<pid>;
    return reg;
  }();
  return *r;
}
}  // namespace

std::optional<term> message_term(core::message_node* n) {
  if (n->type == core::tag_of<term>()) return std::move(core::payload<term>(n));
  encoder_registry& r = encoders();
  std::shared_lock lock(r.mu);
  auto it = r.by_type.find(n->type);
  if (it == r.by_type.end()) return std::nullopt;
  return it->second(n);
}

void register_encoder(const core::type_descriptor* type, encode_fn f) {
  encoder_registry& r = encoders();
  std::unique_lock lock(r.mu);
  r.by_type[type] = f;
}

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
