/// @file
/// beamlet/otp/start_result.hpp: what a start function returns (OTP's {ok, Pid} | {ok, Pid, Info} |
/// ignore | {error, Reason}).
///
/// It is what a child reports through proc_lib's init_ack, what gen_server::start_link returns,
/// and what every supervisor child start function must produce. A value type; `info` is an
/// arbitrary payload (std::any) for the {ok, Pid, Info} form.
#pragma once

#include <any>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>

#include <beamlet/core/config.hpp>
#include <beamlet/core/exit_reason.hpp>
#include <beamlet/core/ids.hpp>

BEAMLET_BEGIN_NAMESPACE

/// What a start function returns: {ok, Pid}, {ok, Pid, Info}, ignore or {error, Reason}. Test it
/// with is_ok() (or as a bool) before using pid().
class start_result {
 public:
  /// The form: ok ({ok, Pid} or {ok, Pid, Info}), ignore, or error ({error, Reason}).
  enum class kind : std::uint8_t { ok, ignore, error };

  /// {error, normal}: a default-constructed result is a failure, never a silent success.
  start_result() noexcept : kind_(kind::error) {}

  /// {ok, Pid}: `p` started.
  static start_result ok(beamlet::pid p) noexcept { return start_result(kind::ok, p); }
  /// {ok, Pid, Info}
  static start_result ok(beamlet::pid p, std::any info) {
    start_result r(kind::ok, p);
    r.info_ = std::move(info);
    r.has_info_ = true;
    return r;
  }
  /// ignore: nothing was started; the pid is null.
  static start_result ignore() noexcept { return start_result(kind::ignore, beamlet::pid()); }
  /// {error, Reason}: the start failed; the pid is null.
  static start_result error(exit_reason reason) noexcept {
    start_result r(kind::error, beamlet::pid());
    r.reason_ = std::move(reason);
    return r;
  }

  /// The form of this result.
  kind which() const noexcept { return kind_; }
  /// True for {ok, Pid} and {ok, Pid, Info}.
  bool is_ok() const noexcept { return kind_ == kind::ok; }
  /// True for ignore.
  bool is_ignore() const noexcept { return kind_ == kind::ignore; }
  /// True for {error, Reason}.
  bool is_error() const noexcept { return kind_ == kind::error; }
  /// is_ok(): ignore and errors are false.
  explicit operator bool() const noexcept { return is_ok(); }

  /// The started process; the null pid unless ok.
  beamlet::pid pid() const noexcept { return pid_; }
  /// True for {ok, Pid, Info}.
  bool has_info() const noexcept { return has_info_; }
  /// The Info of {ok, Pid, Info}; an empty std::any otherwise.
  const std::any& info() const noexcept { return info_; }
  /// The failure reason; `normal` unless error.
  const exit_reason& reason() const noexcept { return reason_; }

  /// `{ok,<0.5.0>}`, `{ok,<0.5.0>,Info}`, `ignore`, `{error,Reason}`.
  std::string to_string() const;
  /// Writes to_string().
  friend std::ostream& operator<<(std::ostream& os, const start_result& r);
  /// Same kind, pid, reason and presence of info (the info payloads are not compared).
  friend bool operator==(const start_result& a, const start_result& b) noexcept {
    return a.kind_ == b.kind_ && a.pid_ == b.pid_ && a.reason_ == b.reason_ &&
           a.has_info_ == b.has_info_;
  }

 private:
  start_result(kind k, beamlet::pid p) noexcept : kind_(k), pid_(p) {}

  kind kind_;
  bool has_info_ = false;
  beamlet::pid pid_;
  exit_reason reason_;
  std::any info_;
};

BEAMLET_END_NAMESPACE
