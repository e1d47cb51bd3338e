// Fixture for check_layers: a deprecated flat path, which hides the layer it reaches.
#include <beamlet/core/runtime.hpp>
#include <beamlet/process.hpp>
