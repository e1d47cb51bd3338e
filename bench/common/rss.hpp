// The resident set size of this process, for the benchmark programs that report memory.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace beamlet::bench {

/// Resident set size in bytes (0 if /proc/self/statm cannot be read).
inline std::int64_t rss_bytes() {
  long pages = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<std::int64_t>(resident) * ::sysconf(_SC_PAGESIZE);
}

}  // namespace beamlet::bench
