/// @file
/// beamlet/core/config.hpp: the ABI namespace (and, through beamlet/version.hpp, the version).
///
/// Everything public lives in `beamlet::v0` (an inline namespace), so the ABI version is part of
/// every mangled name: two incompatible beamlet builds linked into one program fail to link
/// instead of misbehaving at run time.
#pragma once

/// Opens `namespace beamlet { inline namespace v0 {`: every public declaration sits between
/// this and BEAMLET_END_NAMESPACE. What a public header declares there is the library's ABI: a
/// shared beamlet (BEAMLET_SHARED) is compiled with every symbol hidden except these, which
/// the visibility pragma marks as exported.
#define BEAMLET_BEGIN_NAMESPACE \
  namespace beamlet {           \
  inline namespace v0 {         \
  _Pragma("GCC visibility push(default)")
/// Closes the two namespaces BEAMLET_BEGIN_NAMESPACE opened.
#define BEAMLET_END_NAMESPACE   \
  _Pragma("GCC visibility pop") \
  }                             \
  }
/// The same namespace, for the library's own sources and private headers (under lib/): what
/// is declared only there stays hidden in a shared beamlet. Not for use outside the library.
#define BEAMLET_BEGIN_PRIVATE_NAMESPACE \
  namespace beamlet {                   \
  inline namespace v0 {
/// Closes the two namespaces BEAMLET_BEGIN_PRIVATE_NAMESPACE opened.
#define BEAMLET_END_PRIVATE_NAMESPACE \
  }                                   \
  }

// Sanitizer detection, used by tests to scale stress sizes down.
#if defined(__SANITIZE_THREAD__)
#define BEAMLET_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define BEAMLET_TSAN 1
#endif
#endif

// The version macros, written once there (after the namespace macros, which it uses).
#include <beamlet/version.hpp>
