// SPDX-License-Identifier: Apache-2.0
//! @file
//! The on-disk cache of compiled modules (host, any C++20 compiler): where it lives, how an
//! entry is keyed, and atomic writes.
//!
//! Directory, first match wins: `$VYRE_PTX_CACHE_DIR`, else `$XDG_CACHE_HOME/vyre/ptx-cache`,
//! else `$HOME/.cache/vyre/ptx-cache`. A variable that is set but empty is an error (it is
//! almost always a broken script), and there is no silent fallback to /tmp: with none of the
//! three set, resolution fails and the caller decides.
//!
//! An entry is one file, written to a temporary name and renamed into place (readers never
//! see a partial file). It stores the full key material (source, options, target) next to the
//! payload, so a hash collision or a damaged file reads as a miss, never as the wrong module.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>

#include "vyre/core/error.hpp"

namespace vyre {

//! 64-bit FNV-1a of `bytes`, continuing from `seed` (chain calls to hash several parts).
constexpr std::uint64_t fnv1a64(std::string_view bytes,
                                std::uint64_t seed = 0xcbf29ce484222325ull) noexcept {
  std::uint64_t h = seed;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

//! Lower-case hexadecimal spelling of `value`, 16 digits.
inline std::string hex64(std::uint64_t value) {
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4)
    text[static_cast<std::size_t>(i)] = "0123456789abcdef"[value & 0xF];
  return text;
}

namespace detail {
inline const char* system_getenv(const char* name) noexcept {
  return std::getenv(name);
}

template <class Getenv>
expected<std::optional<std::filesystem::path>> cache_dir_from(Getenv& getenv_fn,
                                                              const char* variable,
                                                              bool must_be_absolute) {
  const char* value = getenv_fn(variable);
  if (value == nullptr) return std::optional<std::filesystem::path>{};
  if (*value == '\0')
    return fail(error(errc::invalid_argument, "module cache directory: variable is set but empty")
                    .about(variable)
                    .fix("unset the variable or set it to a directory path"));
  std::filesystem::path path(value);
  if (must_be_absolute && !path.is_absolute())
    return fail(
        error(errc::invalid_argument, "module cache directory: variable must hold an absolute path")
            .about(std::string(variable) + '=' + value)
            .fix("set it to an absolute path, or set VYRE_PTX_CACHE_DIR"));
  return std::optional<std::filesystem::path>(std::move(path));
}
}  // namespace detail

//! Resolves the module cache directory from the environment (see the file comment). Does not
//! create it. `getenv_fn(name)` returns the variable's value or nullptr when unset; tests pass
//! their own.
//! @returns `errc::invalid_argument` naming an empty (or, for XDG_CACHE_HOME and HOME,
//!          relative) variable; `errc::not_found` when none of the three is set.
template <class Getenv>
expected<std::filesystem::path> resolve_module_cache_dir(Getenv&& getenv_fn) {
  VYRE_TRY_ASSIGN(auto explicit_dir,
                  detail::cache_dir_from(getenv_fn, "VYRE_PTX_CACHE_DIR", false));
  if (explicit_dir) return *std::move(explicit_dir);
  VYRE_TRY_ASSIGN(auto xdg, detail::cache_dir_from(getenv_fn, "XDG_CACHE_HOME", true));
  if (xdg) return *xdg / "vyre" / "ptx-cache";
  VYRE_TRY_ASSIGN(auto home, detail::cache_dir_from(getenv_fn, "HOME", true));
  if (home) return *home / ".cache" / "vyre" / "ptx-cache";
  return fail(error(errc::not_found,
                    "module cache directory: none of VYRE_PTX_CACHE_DIR, XDG_CACHE_HOME, HOME "
                    "is set")
                  .fix("set VYRE_PTX_CACHE_DIR to a writable directory, or pass a directory "
                       "explicitly"));
}
//! Resolves the module cache directory from the process environment.
inline expected<std::filesystem::path> resolve_module_cache_dir() {
  return resolve_module_cache_dir(detail::system_getenv);
}

//! An on-disk module cache rooted at one directory. Thread-safe (no shared mutable state;
//! concurrent writers of one entry each rename a complete file into place).
class module_disk_cache {
 public:
  static constexpr std::string_view magic = "vyre-module-cache v1\n";

  explicit module_disk_cache(std::filesystem::path directory) : directory_(std::move(directory)) {}

  const std::filesystem::path& directory() const noexcept { return directory_; }

  //! The file an entry with `key_material` lives in: `<hash>.<extension>`.
  std::filesystem::path entry_path(std::string_view key_material,
                                   std::string_view extension) const {
    std::string name = hex64(fnv1a64(key_material));
    name += '.';
    name += extension;
    return directory_ / name;
  }

  //! The payload stored for exactly `key_material`, or nullopt (no entry, another key with
  //! the same hash, or a damaged file).
  //! @returns `errc::io` only when the file exists but cannot be read.
  expected<std::optional<std::string>> load(std::string_view key_material,
                                            std::string_view extension) const {
    const std::filesystem::path path = entry_path(key_material, extension);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return std::optional<std::string>{};
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return fail(error(errc::io, "module disk cache: cannot open an entry for reading")
                      .about(path.string())
                      .fix("check the permissions of the cache directory"));
    std::string file;
    try {
      file.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } catch (const std::bad_alloc&) {
      return fail(error(errc::out_of_memory, "module disk cache: entry does not fit in memory")
                      .about(path.string()));
    }
    if (in.bad())
      return fail(
          error(errc::io, "module disk cache: reading an entry failed").about(path.string()));
    return parse(file, key_material);
  }

  //! Writes `payload` for `key_material` atomically (temporary file, then rename). Creates
  //! the directory when missing.
  //! @returns `errc::io` naming the path when the directory or file cannot be written; no
  //!          temporary file is left behind.
  expected<void> store(std::string_view key_material, std::string_view extension,
                       std::string_view payload) const {
    std::error_code ec;
    std::filesystem::create_directories(directory_, ec);
    if (ec)
      return fail(error(errc::io, "module disk cache: cannot create the cache directory")
                      .with("errno", static_cast<std::uint64_t>(ec.value()))
                      .about(directory_.string())
                      .fix("make the directory writable or choose another with "
                           "VYRE_PTX_CACHE_DIR"));
    const std::filesystem::path final_path = entry_path(key_material, extension);
    std::filesystem::path temporary = final_path;
    temporary += ".tmp-" + unique_suffix();
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      if (out) {
        const std::string header = std::string(magic) + std::to_string(key_material.size()) + '\n' +
                                   std::to_string(payload.size()) + '\n';
        out.write(header.data(), static_cast<std::streamsize>(header.size()));
        out.write(key_material.data(), static_cast<std::streamsize>(key_material.size()));
        out.write(payload.data(), static_cast<std::streamsize>(payload.size()));
        out.flush();
      }
      if (!out) {
        out.close();
        std::filesystem::remove(temporary, ec);
        return fail(error(errc::io, "module disk cache: cannot write an entry")
                        .about(temporary.string())
                        .fix("check free space and permissions of the cache directory"));
      }
    }
    std::filesystem::rename(temporary, final_path, ec);
    if (ec) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      return fail(error(errc::io, "module disk cache: cannot rename an entry into place")
                      .with("errno", static_cast<std::uint64_t>(ec.value()))
                      .about(final_path.string())
                      .fix("check the permissions of the cache directory"));
    }
    return {};
  }

  //! Parses a file's bytes; nullopt unless they are a well-formed entry for `key_material`.
  static std::optional<std::string> parse(std::string_view file, std::string_view key_material) {
    if (file.substr(0, magic.size()) != magic) return std::nullopt;
    file.remove_prefix(magic.size());
    const auto key_size = read_line_number(file);
    const auto payload_size = read_line_number(file);
    if (!key_size || !payload_size || *key_size != key_material.size() ||
        file.size() != *key_size + *payload_size)
      return std::nullopt;
    if (file.substr(0, *key_size) != key_material) return std::nullopt;
    return std::string(file.substr(*key_size));
  }

 private:
  static std::optional<std::uint64_t> read_line_number(std::string_view& text) {
    const std::size_t end = text.find('\n');
    if (end == std::string_view::npos || end == 0 || end > 19) return std::nullopt;
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < end; ++i) {
      if (text[i] < '0' || text[i] > '9') return std::nullopt;
      value = value * 10 + static_cast<std::uint64_t>(text[i] - '0');
    }
    text.remove_prefix(end + 1);
    return value;
  }

  // Unique per process, thread and call: two writers never share a temporary file.
  static std::string unique_suffix() {
    static std::atomic<std::uint64_t> counter{0};
    const std::uint64_t mix = fnv1a64(
        std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())),
        static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
    return hex64(mix) + '-' + std::to_string(counter.fetch_add(1, std::memory_order_relaxed));
  }

  std::filesystem::path directory_;
};

}  // namespace vyre
