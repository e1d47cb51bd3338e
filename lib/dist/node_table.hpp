// The node table's internal side (node_table.cpp): the incarnation behind a slot, for the hot
// paths (encoding every remote pid a message names) that must not copy a string or take a lock;
// and interning for the decoder, which holds the slot for the term it makes and counts what a
// connection introduces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include <beamlet/core/config.hpp>
#include <beamlet/dist/etf.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE
namespace dist::detail {

/// The incarnation interned in `slot`, or null. Valid while something holds a pid of the slot
/// (a term, or a pinned slot): see node_table.cpp.
const node_incarnation* node_entry(std::uint32_t slot) noexcept;

/// The slot of (name, creation), made if need be, retained once for the caller (who hands the
/// hold to a term and then releases it). A new incarnation takes one from `*budget` (when not
/// null); 0 when the budget is spent or the table is full of held slots.
std::uint32_t intern_held(std::string_view name, std::uint32_t creation, std::size_t* budget);
/// The slot of (name, creation), pinned: it names that incarnation for the life of the program
/// (connected nodes; slots handed out as plain numbers).
std::uint32_t intern_pinned(std::string_view name, std::uint32_t creation);

/// decode(), with a budget of new node incarnations the input may introduce (each pid of a node
/// not yet in the table takes one; an input that needs more fails). Null: unbounded. With
/// `source` (a binary whose bytes are `in`), binaries of at least decode_in_place_min bytes are
/// sub-binaries of it.
expected<term, std::string> decode_counting(std::string_view in, std::size_t& pos,
                                            const node_incarnation* self, bool versioned,
                                            const decode_limits& limits, std::size_t* new_nodes,
                                            const binary* source = nullptr);

}  // namespace dist::detail
BEAMLET_END_PRIVATE_NAMESPACE
