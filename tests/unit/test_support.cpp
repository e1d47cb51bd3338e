// The translation unit that compiles test_support.hpp into the tests' precompiled header
// (tests/CMakeLists.txt); it defines nothing.
#include "test_support.hpp"
