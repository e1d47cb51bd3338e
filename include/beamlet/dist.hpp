/// @file
/// beamlet/dist.hpp: the distribution layer (Erlang terms and their external format, and nodes
/// that join an Erlang cluster). Including it costs nothing at run time until dist::start.
#pragma once

#include <beamlet/dist/error.hpp>
#include <beamlet/dist/etf.hpp>
#include <beamlet/dist/gen_call.hpp>
#include <beamlet/dist/global.hpp>
#include <beamlet/dist/node.hpp>
#include <beamlet/dist/pg.hpp>
#include <beamlet/dist/term.hpp>
#include <beamlet/dist/tls.hpp>
