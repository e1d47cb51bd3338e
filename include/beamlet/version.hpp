/// @file
/// beamlet/version.hpp: the version of these headers, and of the library a program linked.
///
/// Semantic versioning (docs/versioning.md): before 1.0 a minor version may change the API and
/// the ABI, a patch version changes neither; from 1.0 on, only a major version breaks either.
/// This header is the one place the version is written: CMake reads it for project(VERSION),
/// the package's beamletConfigVersion.cmake, beamlet.pc and the shared library's SONAME.
/// beamlet/core/config.hpp includes it, so every public header has the macros.
///
/// The macros say what a program was compiled against, version() what it runs with; a program
/// that loads a shared beamlet can compare the two. Thread-safety: version() may be called from
/// any thread at any time, before or without a runtime.
#pragma once

#include <beamlet/core/config.hpp>

/// The headers' major version: a change breaks the API or ABI (from 1.0 on).
#define BEAMLET_VERSION_MAJOR 0
/// The headers' minor version: before 1.0, a change may break the API and the ABI.
#define BEAMLET_VERSION_MINOR 2
/// The headers' patch version: a change breaks neither the API nor the ABI.
#define BEAMLET_VERSION_PATCH 0
/// MAJOR * 10000 + MINOR * 100 + PATCH, for `#if BEAMLET_VERSION >= 200`.
#define BEAMLET_VERSION \
  (BEAMLET_VERSION_MAJOR * 10000 + BEAMLET_VERSION_MINOR * 100 + BEAMLET_VERSION_PATCH)
/// The headers' version as text, "MAJOR.MINOR.PATCH".
#define BEAMLET_VERSION_STRING "0.2.0"

BEAMLET_BEGIN_NAMESPACE

/// A version of beamlet.
struct version_info {
  /// The major version (BEAMLET_VERSION_MAJOR when the library was built).
  int major = 0;
  /// The minor version.
  int minor = 0;
  /// The patch version.
  int patch = 0;
  const char* string = "";  ///< "major.minor.patch"
};

/// The version of the library linked (the macros above give the headers').
version_info version() noexcept;

BEAMLET_END_NAMESPACE
