// beamlet/core/detail/message.hpp: the node every message and signal travels in.
//
// A node is a 16-byte header (intrusive link + pointer to a per-type descriptor) followed by the
// payload. The descriptor's address is the type's identity: a typed receive clause matches by
// comparing one pointer, which keeps the scan of a long mailbox at a few nanoseconds per
// message without ever touching the payload. Signals (links, exits, DOWNs in transit, timeouts)
// use the same header with descriptors of kind `signal`; they never reach the message queue.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include <beamlet/core/config.hpp>
#include <beamlet/core/detail/allocator.hpp>

BEAMLET_BEGIN_NAMESPACE
namespace detail {

struct message_node;

enum class node_kind : std::uint8_t { message, signal };

/// One per message type (and one per internal signal kind).
struct type_descriptor {
  void (*destroy)(message_node*) noexcept;  ///< runs the payload destructor and frees the node
  const std::type_info* type;               ///< for diagnostics (any_message::type_name)
  node_kind kind;
  std::uint8_t signal;          ///< which signal, for kind == signal
  const void* ext = nullptr;    ///< protocol data for envelopes and replies (gen_server)
  std::uint32_t node_size = 0;  ///< bytes of the node (header + payload): memory accounting
  /// A message the runtime needs to keep a process manageable (exit messages, DOWNs, call
  /// replies, system requests): a bounded mailbox never counts or drops it.
  bool control = false;
};

struct message_node {
  message_node* next;
  const type_descriptor* type;
};

template <class T>
struct typed_node : message_node {
  template <class... Args>
  explicit typed_node(const type_descriptor* d, Args&&... args)
      : message_node{nullptr, d}, value(std::forward<Args>(args)...) {}
  T value;
};

template <class T>
void destroy_typed(message_node* n) noexcept {
  auto* t = static_cast<typed_node<T>*>(n);
  t->~typed_node();
  deallocate(t, sizeof(typed_node<T>));
}

/// True for the message types a bounded mailbox never counts or drops (see type_descriptor);
/// specialized next to each such type, before any message of it is made.
template <class T>
inline constexpr bool is_control_message = false;

/// The identity of message type T.
template <class T>
inline constexpr type_descriptor message_type{
    &destroy_typed<T>,     &typeid(T),           node_kind::message, 0, nullptr,
    sizeof(typed_node<T>), is_control_message<T>};

/// Counted by a bounded mailbox: an ordinary message (not a signal, not a control message).
inline bool counted_message(const message_node* n) noexcept {
  return n->type->kind == node_kind::message && !n->type->control;
}

template <class T>
constexpr const type_descriptor* tag_of() noexcept {
  return &message_type<T>;
}

/// Allocates and constructs a node holding a T (a message of type T).
template <class T, class... Args>
typed_node<T>* make_node(const type_descriptor* d, Args&&... args) {
  void* mem = allocate(sizeof(typed_node<T>));
  try {
    return ::new (mem) typed_node<T>(d, std::forward<Args>(args)...);
  } catch (...) {
    deallocate(mem, sizeof(typed_node<T>));
    throw;
  }
}

template <class T>
message_node* make_message(T&& value) {
  using D = std::decay_t<T>;
  return make_node<D>(tag_of<D>(), std::forward<T>(value));
}

inline void destroy_node(message_node* n) noexcept {
  n->type->destroy(n);
}

struct node_deleter {
  void operator()(message_node* n) const noexcept { destroy_node(n); }
};
/// The one owning handle of a message node: messages held by receive results, continuations,
/// replies waiting to be sent.
using node_ptr = std::unique_ptr<message_node, node_deleter>;

template <class T>
T& payload(message_node* n) noexcept {
  return static_cast<typed_node<T>*>(n)->value;
}

}  // namespace detail
BEAMLET_END_NAMESPACE
