// The C++ functions a node serves to rpc calls from other nodes (register_rpc), shared by the
// two ways such a call arrives: an erpc spawn request (rpc.cpp) and a call to `rex`
// (rpc_client.cpp, the server side of rpc:call's older path and of beamlet's own rpc_call).
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include <beamlet/core/extension.hpp>
#include <beamlet/dist/node.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

struct rpc_table final : runtime_extension {
  std::mutex mu;
  std::map<std::pair<std::string, std::string>, rpc_function> functions;

  std::optional<rpc_function> find(const std::string& module, const std::string& function) {
    std::lock_guard lock(mu);
    auto it = functions.find({module, function});
    if (it == functions.end()) return std::nullopt;
    return it->second;
  }
};

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
