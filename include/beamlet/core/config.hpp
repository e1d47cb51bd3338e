/// @file
/// beamlet/core/config.hpp: the ABI namespace (and, through beamlet/version.hpp, the version).
///
/// Everything public lives in `beamlet::v0` (an inline namespace), so the ABI version is part of
/// every mangled name: two incompatible beamlet builds linked into one program fail to link
/// instead of misbehaving at run time.
#pragma once

/// Opens `namespace beamlet { inline namespace v0 {`: every public declaration sits between
/// this and BEAMLET_END_NAMESPACE.
#define BEAMLET_BEGIN_NAMESPACE \
  namespace beamlet {           \
  inline namespace v0 {
/// Closes the two namespaces BEAMLET_BEGIN_NAMESPACE opened.
#define BEAMLET_END_NAMESPACE \
  }                           \
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
