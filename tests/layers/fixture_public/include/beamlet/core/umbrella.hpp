// Fixture for check_layers: a core header including the umbrella of every layer.
#pragma once
#include <beamlet/beamlet.hpp>
