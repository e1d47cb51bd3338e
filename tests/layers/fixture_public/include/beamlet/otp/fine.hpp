// Fixture for check_layers: a layer including its own headers and the ones below: allowed.
#pragma once
#include <beamlet/core/runtime.hpp>
#include <beamlet/otp/supervisor.hpp>
