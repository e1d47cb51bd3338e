// beamlet/version.hpp: the library linked reports the version its headers say, in both forms.
#include <beamlet/version.hpp>

#include <gtest/gtest.h>

#include <string>

namespace beamlet::test {
namespace {

TEST(Version, TheLibraryIsTheVersionOfItsHeaders) {
  const version_info v = version();
  EXPECT_EQ(v.major, BEAMLET_VERSION_MAJOR);
  EXPECT_EQ(v.minor, BEAMLET_VERSION_MINOR);
  EXPECT_EQ(v.patch, BEAMLET_VERSION_PATCH);
  EXPECT_STREQ(v.string, BEAMLET_VERSION_STRING);
  EXPECT_EQ(std::string(v.string), std::to_string(v.major) + "." + std::to_string(v.minor) + "." +
                                       std::to_string(v.patch));
  EXPECT_EQ(BEAMLET_VERSION, v.major * 10000 + v.minor * 100 + v.patch);
}

TEST(Version, CMakeReadTheHeadersVersion) {
  // The package files and the SONAME come from what CMake read.
  EXPECT_STREQ(BEAMLET_CMAKE_VERSION, BEAMLET_VERSION_STRING);
}

}  // namespace
}  // namespace beamlet::test
