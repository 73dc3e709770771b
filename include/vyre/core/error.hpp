// SPDX-License-Identifier: Apache-2.0
//! @file
//! `vyre::error`: the one error value of the library, usable on host and device.
//!
//! An error is a small trivially copyable value: a category (`errc`), the CUDA status when a
//! CUDA call failed, a static context string ("what was being done"), up to four named numbers,
//! an optional short subject (a file name, a node id) and a static fix hint. Its message reads
//!
//!     snapshot::validate: a child names an e-class that has no row [row=7, child_eclass=42].
//!     Fix: add a row for that e-class or drop the child.
//!
//! Internals return `cuda::std::expected<T, vyre::error>`; only the public boundary turns an
//! error into an exception or hands it back, as the error policy chooses (policies.hpp).
//!
//! @note An error built in device code points at string literals in device memory. After
//!       copying one to the host, read only `code()`, `value_at(i).value`, `value_count()` and
//!       `cuda_status()`; the text accessors (and `value_or`, which compares names) are for
//!       errors built on the side that reads them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <cuda/std/expected>

#include "vyre/core/config.hpp"
#include "vyre/detail/enum_name.hpp"

namespace vyre {

//! Error categories. Stable numbering: values are only ever appended.
enum class errc : std::uint8_t {
  invalid_argument = 1,  //!< a parameter is outside what the operation accepts
  overflow,              //!< a size or offset computation would wrap around
  out_of_range,          //!< a value does not fit the destination type
  abi_limit,             //!< a value exceeds the u32 image ABI (shard the input)
  out_of_memory,         //!< host, pinned or device allocation failed
  cuda_runtime,          //!< a CUDA runtime API call failed
  cuda_driver,           //!< a CUDA driver API call failed
  unsupported,           //!< the device or build lacks a required feature
  invalid_handle,        //!< a handle is foreign, freed or stale
  invalid_layout,        //!< spans that do not fit the buffer they describe
  in_use,                //!< the object is still used by pending work
  io,                    //!< a file could not be read or written
  parse,                 //!< malformed text input
  corrupt_data,          //!< a binary input failed its integrity checks
  duplicate,             //!< an id that must be unique appears twice
  not_found,             //!< a referenced id does not exist
  invalid_state,         //!< the call is not allowed in the object's current state
};

//! Short human name of an error category.
VYRE_HOST_DEVICE constexpr const char* errc_name(errc code) noexcept {
  constexpr const char* names[] = {"invalid argument",
                                   "arithmetic overflow",
                                   "value out of range",
                                   "exceeds the u32 image ABI",
                                   "out of memory",
                                   "CUDA runtime error",
                                   "CUDA driver error",
                                   "unsupported",
                                   "invalid handle",
                                   "invalid layout",
                                   "in use",
                                   "I/O error",
                                   "parse error",
                                   "corrupt data",
                                   "duplicate",
                                   "not found",
                                   "invalid state"};
  return detail::enum_name<errc::invalid_argument, errc::invalid_state>(code, names,
                                                                        "unknown error");
}

//! Where `error::cuda_status()` came from.
enum class status_source : std::uint8_t { none, cuda_runtime, cuda_driver };

//! One named number attached to an error. `name` must be a string with static storage.
struct error_value {
  const char* name = nullptr;
  std::uint64_t value = 0;
};

class error {
 public:
  static constexpr int max_values = 4;
  //! Room for a subject such as a file path or a node id; longer subjects keep their tail
  //! (the most specific part) behind a leading "...".
  static constexpr std::size_t subject_capacity = 120;

  //! @param context static text: what was being done and what went wrong.
  VYRE_HOST_DEVICE constexpr error(errc code, const char* context) noexcept
      : code_(code), context_(context) {}

  //! Attaches a named value (at most `max_values`; further ones are dropped, which only a
  //! library bug would trigger, never user input).
  VYRE_HOST_DEVICE constexpr error& with(const char* name, std::uint64_t value) noexcept {
    if (value_count_ < max_values) values_[value_count_++] = error_value{name, value};
    return *this;
  }
  //! Attaches a static fix hint ("Fix: ..." in the message).
  VYRE_HOST_DEVICE constexpr error& fix(const char* hint) noexcept {
    fix_ = hint;
    return *this;
  }
  //! Attaches the failed CUDA status and its static name (cudaGetErrorName/cuGetErrorName).
  VYRE_HOST_DEVICE constexpr error& cuda(status_source source, int status,
                                         const char* status_name) noexcept {
    source_ = source;
    cuda_status_ = status;
    cuda_status_name_ = status_name;
    return *this;
  }
  //! Attaches a short dynamic subject (copied). Host and device.
  VYRE_HOST_DEVICE constexpr error& about(const char* text, std::size_t length) noexcept {
    std::size_t skip = 0;
    subject_length_ = 0;
    if (length > subject_capacity) {
      constexpr char marker[] = "...";
      for (std::size_t i = 0; i < 3; ++i) subject_[subject_length_++] = marker[i];
      skip = length - (subject_capacity - 3);
    }
    for (std::size_t i = skip; i < length; ++i) subject_[subject_length_++] = text[i];
    return *this;
  }
  VYRE_HOST error& about(std::string_view text) noexcept { return about(text.data(), text.size()); }

  VYRE_HOST_DEVICE constexpr errc code() const noexcept { return code_; }
  VYRE_HOST_DEVICE constexpr const char* context() const noexcept { return context_; }
  VYRE_HOST_DEVICE constexpr const char* fix_hint() const noexcept { return fix_; }
  VYRE_HOST_DEVICE constexpr status_source cuda_source() const noexcept { return source_; }
  //! The CUDA runtime (`cudaError_t`) or driver (`CUresult`) status; 0 when none.
  VYRE_HOST_DEVICE constexpr int cuda_status() const noexcept { return cuda_status_; }
  VYRE_HOST_DEVICE constexpr const char* cuda_status_name() const noexcept {
    return cuda_status_name_;
  }
  VYRE_HOST_DEVICE constexpr int value_count() const noexcept { return value_count_; }
  VYRE_HOST_DEVICE constexpr error_value value_at(int i) const noexcept { return values_[i]; }
  //! The value attached under `name`, or `fallback`.
  VYRE_HOST_DEVICE constexpr std::uint64_t value_or(const char* name,
                                                    std::uint64_t fallback) const noexcept {
    for (int i = 0; i < value_count_; ++i)
      if (same_text(values_[i].name, name)) return values_[i].value;
    return fallback;
  }
  VYRE_HOST std::string_view subject() const noexcept { return {subject_, subject_length_}; }

  //! The full message: context, subject, values, CUDA status, then "Fix: ...".
  VYRE_HOST std::string message() const {
    std::string text = context_ != nullptr ? context_ : errc_name(code_);
    if (subject_length_ != 0) {
      text += " (";
      text.append(subject_, subject_length_);
      text += ')';
    }
    if (value_count_ != 0) {
      text += " [";
      for (int i = 0; i < value_count_; ++i) {
        if (i != 0) text += ", ";
        text += values_[i].name;
        text += '=';
        text += std::to_string(values_[i].value);
      }
      text += ']';
    }
    if (source_ != status_source::none) {
      text += source_ == status_source::cuda_runtime ? " [CUDA runtime: " : " [CUDA driver: ";
      text += cuda_status_name_ != nullptr ? cuda_status_name_ : "unknown status";
      text += " (" + std::to_string(cuda_status_) + ")]";
    }
    text += '.';
    if (fix_ != nullptr) {
      text += " Fix: ";
      text += fix_;
    }
    return text;
  }

 private:
  VYRE_HOST_DEVICE static constexpr bool same_text(const char* a, const char* b) noexcept {
    if (a == nullptr || b == nullptr) return a == b;
    while (*a != '\0' && *a == *b) ++a, ++b;
    return *a == *b;
  }

  errc code_;
  status_source source_ = status_source::none;
  std::uint8_t value_count_ = 0;
  int cuda_status_ = 0;
  const char* context_;
  const char* fix_ = nullptr;
  const char* cuda_status_name_ = nullptr;
  error_value values_[max_values]{};
  std::size_t subject_length_ = 0;
  char subject_[subject_capacity]{};
};

//! The exception thrown at the public boundary under `on_error::throw_exception`.
class error_exception : public std::runtime_error {
 public:
  explicit error_exception(const error& err) : std::runtime_error(err.message()), error_(err) {}
  const vyre::error& error() const noexcept { return error_; }
  errc code() const noexcept { return error_.code(); }

 private:
  vyre::error error_;
};

//! What internals return.
template <class T>
using expected = cuda::std::expected<T, error>;

//! Wraps an error for returning from a function that returns `vyre::expected<T>`.
VYRE_HOST_DEVICE constexpr cuda::std::unexpected<error> fail(const error& err) noexcept {
  return cuda::std::unexpected<error>(err);
}

}  // namespace vyre

//! Propagates the error of a `vyre::expected` expression from the enclosing function (which
//! must return some `vyre::expected<...>`).
#define VYRE_TRY(expr)                                       \
  do {                                                       \
    if (auto&& vyre_try_result_ = (expr); !vyre_try_result_) \
      return ::vyre::fail(vyre_try_result_.error());         \
  } while (false)

#define VYRE_DETAIL_CONCAT_INNER(a, b) a##b
#define VYRE_DETAIL_CONCAT(a, b) VYRE_DETAIL_CONCAT_INNER(a, b)
#define VYRE_DETAIL_TRY_ASSIGN(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp) return ::vyre::fail(tmp.error());  \
  lhs = std::move(*tmp)

//! `VYRE_TRY_ASSIGN(auto x, f())`: declares/assigns the value of `f()` or propagates its error.
#define VYRE_TRY_ASSIGN(lhs, expr) \
  VYRE_DETAIL_TRY_ASSIGN(VYRE_DETAIL_CONCAT(vyre_try_value_, __LINE__), lhs, expr)
