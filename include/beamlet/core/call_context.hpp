/// @file
/// beamlet/core/call_context.hpp: one declaration for a call made from a process or from a thread.
///
/// A management call (start_child, which_children, sys::suspend, ...) is made either from inside
/// a process, where it must not block a scheduler thread and is a task<T> to co_await, or from an
/// outside thread through its scoped_process, where it blocks the thread and returns T. Both run
/// the same protocol, so such a call is declared once, over its context:
///
/// @code
///   template <call_context Ctx>
///   static in_context<Ctx, child_counts> count_children(Ctx& self, supervisor_ref sup, ...);
///
///   child_counts c = co_await supervisor::count_children(self, sup);  // in a process
///   child_counts c = supervisor::count_children(me, sup);             // on a thread
/// @endcode
///
/// Thread-safety and failure are those of the call: the context is used by its owner only (the
/// process running, or the thread owning the scoped_process), and a call's errors are the same
/// in both forms (thrown from the co_await, or from the blocking call).
#pragma once

#include <concepts>
#include <type_traits>
#include <utility>

#include <beamlet/core/config.hpp>
#include <beamlet/core/process.hpp>
#include <beamlet/core/scoped_process.hpp>
#include <beamlet/core/task.hpp>

BEAMLET_BEGIN_NAMESPACE

/// Where a call can be made from: a process, or an outside thread's scoped_process.
template <class Ctx>
concept call_context = std::same_as<Ctx, process> || std::same_as<Ctx, scoped_process>;

/// What a call made from `Ctx` returns: task<T> in a process (co_await it), T on a thread.
template <call_context Ctx, class T>
using in_context = std::conditional_t<std::same_as<Ctx, process>, task<T>, T>;

namespace detail {

/// Hands a protocol's task to the context: a process gets the task to co_await; an outside
/// thread runs it to completion (its receives block the thread) and gets the result.
template <call_context Ctx, class T>
in_context<Ctx, T> finish_in(Ctx&, task<T> t) {
  if constexpr (std::same_as<Ctx, process>)
    return t;
  else
    return run_to_completion(std::move(t));
}

template <class T>
task<T> ready_task(T value) {
  co_return value;
}

/// A result known without running the protocol (an argument refused before anything is sent),
/// in the context's form.
template <call_context Ctx, class T>
in_context<Ctx, T> ready_in(Ctx&, T value) {
  if constexpr (std::same_as<Ctx, process>)
    return ready_task(std::move(value));
  else
    return value;
}

}  // namespace detail

BEAMLET_END_NAMESPACE
