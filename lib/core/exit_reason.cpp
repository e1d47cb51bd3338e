#include <beamlet/core/exit_reason.hpp>

#include <cxxabi.h>

#include <atomic>
#include <ostream>
#include <typeinfo>
#include <utility>

#include <boost/core/demangle.hpp>

BEAMLET_BEGIN_PRIVATE_NAMESPACE

namespace detail {

namespace {

/// Erlang prints an atom bare when it starts with a lowercase letter, has only letters, digits,
/// _ and @, and is not a reserved word (`'end'` must be quoted to read back as an atom).
bool bare_atom(std::string_view s) {
  if (s.empty() || s[0] < 'a' || s[0] > 'z') return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '@';
    if (!ok) return false;
  }
  static constexpr std::string_view reserved[] = {
      "after", "and",    "andalso", "band", "begin", "bnot", "bor", "bsl",   "bsr", "bxor",
      "case",  "catch",  "cond",    "div",  "end",   "fun",  "if",  "let",   "not", "of",
      "or",    "orelse", "receive", "rem",  "try",   "when", "xor", "maybe", "else"};
  for (std::string_view r : reserved)
    if (s == r) return false;
  return true;
}

/// `s` between `q` quotes, with the escapes Erlang's reader takes back: \n, \t, \\, the
/// quote, and three octal digits for any other control byte.
void append_quoted(std::string& out, std::string_view s, char q) {
  out.push_back(q);
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (ch == '\\' || ch == q) {
      out.push_back('\\');
      out.push_back(ch);
    } else if (c < 32 || c == 127) {
      const char octal[] = {'\\', static_cast<char>('0' + (c >> 6)),
                            static_cast<char>('0' + ((c >> 3) & 7)),
                            static_cast<char>('0' + (c & 7))};
      out.append(octal, sizeof octal);
    } else {
      out.push_back(ch);
    }
  }
  out.push_back(q);
}

}  // namespace

void append_erlang_atom(std::string& out, std::string_view name) {
  if (bare_atom(name))
    out += name;
  else
    append_quoted(out, name, '\'');
}

void append_erlang_string(std::string& out, std::string_view text) {
  append_quoted(out, text, '"');
}

}  // namespace detail

struct exit_reason::payload {
  std::atomic<std::uint32_t> refs{1};
  std::string detail;
  std::string type;
  std::shared_ptr<const void> value{};  // with_value's, of value_type
  const std::type_info* value_type = nullptr;
};

namespace {

const std::string& empty_string() {
  static const std::string e;
  return e;
}

}  // namespace

exit_reason exit_reason::shutdown(std::string detail) {
  if (detail.empty()) return shutdown();
  auto* p = new payload;
  p->detail = std::move(detail);
  return exit_reason(kind::shutdown, p);
}

exit_reason exit_reason::error(std::string term) {
  auto* p = new payload;
  p->detail = std::move(term);
  return exit_reason(kind::error, p);
}

exit_reason exit_reason::exception(std::string type_name, std::string what) {
  auto* p = new payload;
  p->type = std::move(type_name);
  p->detail = std::move(what);
  return exit_reason(kind::exception, p);
}

// What every exception turns into when memory for a better reason cannot be had: built at
// program start and never freed (its count never reaches zero), so no allocation is needed.
exit_reason::payload exit_reason::out_of_memory_{
    {1}, "out of memory while recording an exit reason", "std::bad_alloc"};

exit_reason exit_reason::from_exception(const std::exception_ptr& e) noexcept {
  if (!e) return normal();
  try {
    try {
      std::rethrow_exception(e);
    } catch (const exit_exception& x) {
      return x.reason();
    } catch (const std::exception& x) {
      // what() may legally return anything, null included.
      const char* w = x.what();
      return exception(boost::core::demangle(typeid(x).name()), w != nullptr ? std::string(w) : "");
    } catch (const char* s) {
      return exception("const char*", s != nullptr ? std::string(s) : "");
    } catch (const std::string& s) {
      return exception(boost::core::demangle(typeid(std::string).name()), s);
    } catch (...) {
      const std::type_info* t = abi::__cxa_current_exception_type();
      return exception(t != nullptr ? boost::core::demangle(t->name()) : std::string("unknown"),
                       std::string());
    }
  } catch (...) {
    // Building the reason failed (out of memory, or a demangler failure).
  }
  out_of_memory_.refs.fetch_add(1, std::memory_order_relaxed);
  return exit_reason(kind::exception, &out_of_memory_);
}

exit_reason::exit_reason(const exit_reason& o) noexcept : kind_(o.kind_), payload_(o.payload_) {
  if (payload_ != nullptr) payload_->refs.fetch_add(1, std::memory_order_relaxed);
}

exit_reason::exit_reason(exit_reason&& o) noexcept
    : kind_(o.kind_), payload_(std::exchange(o.payload_, nullptr)) {
  o.kind_ = kind::normal;
}

exit_reason& exit_reason::operator=(const exit_reason& o) noexcept {
  exit_reason copy(o);
  std::swap(kind_, copy.kind_);
  std::swap(payload_, copy.payload_);
  return *this;
}

exit_reason& exit_reason::operator=(exit_reason&& o) noexcept {
  if (this != &o) {
    exit_reason moved(std::move(o));
    std::swap(kind_, moved.kind_);
    std::swap(payload_, moved.payload_);
  }
  return *this;
}

exit_reason::~exit_reason() {
  if (payload_ != nullptr && payload_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1)
    delete payload_;
}

exit_reason exit_reason::with_value(std::shared_ptr<const void> v,
                                    const std::type_info& type) const {
  if (payload_ == nullptr) return *this;
  auto* p = new payload;
  p->detail = payload_->detail;
  p->type = payload_->type;
  p->value = std::move(v);
  p->value_type = &type;
  return exit_reason(kind_, p);
}

const void* exit_reason::value_of(const std::type_info& type) const noexcept {
  if (payload_ == nullptr || payload_->value_type == nullptr || *payload_->value_type != type)
    return nullptr;
  return payload_->value.get();
}

const std::string& exit_reason::detail() const noexcept {
  return payload_ != nullptr ? payload_->detail : empty_string();
}

const std::string& exit_reason::exception_type() const noexcept {
  return payload_ != nullptr ? payload_->type : empty_string();
}

std::string exit_reason::to_string() const {
  switch (kind_) {
    case kind::normal:
      return "normal";
    case kind::shutdown:
      return detail().empty() ? "shutdown" : "{shutdown," + detail() + "}";
    case kind::kill:
      return "kill";
    case kind::killed:
      return "killed";
    case kind::noproc:
      return "noproc";
    case kind::exception:
      return "{exception," + exception_type() + ",\"" + detail() + "\"}";
    case kind::error:
      return detail();
  }
  return "unknown";
}

bool operator==(const exit_reason& a, const exit_reason& b) noexcept {
  return a.kind_ == b.kind_ && a.detail() == b.detail() && a.exception_type() == b.exception_type();
}

std::ostream& operator<<(std::ostream& os, const exit_reason& r) {
  return os << r.to_string();
}

exit_exception::exit_exception(exit_reason reason)
    : reason_(std::move(reason)), text_("beamlet: exit " + reason_.to_string()) {}

BEAMLET_END_PRIVATE_NAMESPACE
