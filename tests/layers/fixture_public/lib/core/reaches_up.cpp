// Fixture for check_layers: the core including the layer above it (never compiled).
#include <beamlet/core/process.hpp>
#include <beamlet/otp/gen_server.hpp>
