// SPDX-License-Identifier: Apache-2.0
//! @file
//! Run-time modules, for engines that generate kernels: PTX or cubin loaded through the driver
//! API and cached by content (hash plus a full comparison, so a collision never returns the
//! wrong module) for the device's compute capability; CUDA C++ compiled with NVRTC, optionally
//! cached on disk (`module_disk_cache.hpp`).
//!
//! @note NVRTC is a separate library: a program that calls `compile` links `CUDA::nvrtc`. The
//!       driver is reached through the runtime (`driver.hpp`), so nothing links libcuda.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include "vyre/core/cuda_check.hpp"
#include "vyre/core/error.hpp"
#include "vyre/runtime/device.hpp"
#include "vyre/runtime/driver.hpp"
#include "vyre/runtime/module_disk_cache.hpp"
#include "vyre/runtime/telemetry.hpp"

namespace vyre {

//! What a module image holds.
enum class module_format : std::uint8_t { ptx, cubin };

//! Counters of one module cache.
struct module_cache_stats {
  std::uint64_t loads = 0;        //!< images handed to the driver
  std::uint64_t memory_hits = 0;  //!< loads answered by an already loaded module
  std::uint64_t compiles = 0;     //!< NVRTC compilations run
  std::uint64_t disk_hits = 0;    //!< compilations answered by the disk cache
  std::uint64_t disk_writes = 0;  //!< entries written to the disk cache
};

//! Loaded modules of one device (thread-safe). Modules stay loaded until `clear()` or the
//! cache's destruction; `CUmodule`/`CUfunction` values stay valid until then.
class module_cache {
 public:
  module_cache(int ordinal, int compute_capability, telemetry_counters* telemetry) noexcept
      : ordinal_(ordinal), compute_capability_(compute_capability), telemetry_(telemetry) {}
  module_cache(const module_cache&) = delete;
  module_cache& operator=(const module_cache&) = delete;
  ~module_cache() { (void)clear(); }

  //! Loads a PTX (text) or cubin (binary) image, or returns the module already loaded from
  //! the same bytes.
  //! @returns `errc::invalid_argument` for an empty image; `errc::cuda_driver` with the JIT's
  //!          first error line as subject when the driver rejects it; `errc::unsupported`
  //!          without a driver.
  expected<CUmodule> load(std::string_view image, module_format format) {
    if (image.empty())
      return fail(error(errc::invalid_argument, "module_cache::load: empty image")
                      .fix("pass PTX text or a cubin"));
    const std::uint64_t key = fnv1a64(image, seed(format));
    std::lock_guard lock(mutex_);
    if (const auto it = loaded_.find(key); it != loaded_.end())
      for (const entry& e : it->second)
        if (e.format == format && e.image == image) {
          ++stats_.memory_hits;
          return e.module;
        }
    VYRE_TRY_ASSIGN(const driver_api* api, driver_api::get());
    detail::device_guard guard(ordinal_);
    VYRE_TRY(guard.status());
    VYRE_CUDA_TRY(cudaFree(nullptr), "module_cache::load: making the primary context current");
    // PTX must be NUL-terminated for the JIT; a string_view need not be.
    std::string owned(image);
    char log[4096] = {};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(static_cast<std::uintptr_t>(sizeof(log)))};
    CUmodule module = nullptr;
    const CUresult status = api->module_load_data_ex(&module, owned.c_str(), 2, options, values);
    ++stats_.loads;
    if (status != CUDA_SUCCESS)
      return fail(
          cuda_driver_error(status, "module_cache::load: cuModuleLoadDataEx rejected the image")
              .about(first_error_line(log))
              .fix("check the image targets this device (compute capability) and "
                   "read the JIT log in the subject"));
    try {
      loaded_[key].push_back(entry{format, std::move(owned), module});
    } catch (...) {
      (void)api->module_unload(module);
      return fail(error(errc::out_of_memory, "module_cache::load: host allocation failed")
                      .with("bytes", sizeof(entry)));
    }
    return module;
  }
  expected<CUmodule> load_ptx(std::string_view ptx) { return load(ptx, module_format::ptx); }
  expected<CUmodule> load_cubin(std::span<const std::byte> cubin) {
    return load(std::string_view(reinterpret_cast<const char*>(cubin.data()), cubin.size()),
                module_format::cubin);
  }

  //! The kernel `name` (its mangled name unless declared `extern "C"`) of `module`.
  //! @returns `errc::not_found` naming the kernel when the module lacks it.
  expected<CUfunction> function(CUmodule module, const char* name) const {
    VYRE_TRY_ASSIGN(const driver_api* api, driver_api::get());
    CUfunction fn = nullptr;
    const CUresult status = api->module_get_function(&fn, module, name);
    if (status == CUDA_ERROR_NOT_FOUND)
      return fail(error(errc::not_found, "module_cache::function: the module has no such kernel")
                      .about(name)
                      .fix("declare the kernel extern \"C\" or pass its mangled name"));
    VYRE_CU_TRY(status, "module_cache::function: cuModuleGetFunction failed");
    return fn;
  }

  //! Launches `fn` through the driver (`args`: one pointer per kernel parameter) and records
  //! the launch in telemetry.
  expected<void> launch(CUfunction fn, dim3 grid, dim3 block, unsigned int shared_bytes,
                        cudaStream_t stream, void** args) const {
    VYRE_TRY_ASSIGN(const driver_api* api, driver_api::get());
    VYRE_CU_TRY(api->launch_kernel(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                   shared_bytes, stream, args, nullptr),
                "module_cache::launch: cuLaunchKernel failed");
    if (telemetry_ != nullptr) telemetry_->record_kernel_launch();
    return {};
  }

  //! Compiles CUDA C++ `source` with NVRTC to PTX for this device (`-arch=compute_XY` is added
  //! unless `options` name an architecture). Answered from the disk cache when one is set and
  //! holds this exact (source, options, NVRTC version, target).
  //! @returns `errc::invalid_argument` with the first error line of the log as subject when
  //!          the source does not compile; `errc::io` when the disk cache cannot be written.
  expected<std::string> compile(std::string_view source, std::span<const std::string> options = {},
                                std::string_view name = "vyre_module.cu") {
    std::vector<std::string> all(options.begin(), options.end());
    bool has_arch = false;
    for (const std::string& o : all)
      if (o.starts_with("-arch") || o.starts_with("--gpu-architecture")) has_arch = true;
    if (!has_arch)
      all.push_back("--gpu-architecture=compute_" + std::to_string(compute_capability_));
    int major = 0, minor = 0;
    if (const nvrtcResult v = nvrtcVersion(&major, &minor); v != NVRTC_SUCCESS)
      return fail(nvrtc_error(v, "module_cache::compile: nvrtcVersion failed"));
    std::string key = "nvrtc " + std::to_string(major) + '.' + std::to_string(minor) + '\n';
    for (const std::string& o : all) key += o + '\n';
    key += name;
    key += '\n';
    key += source;

    std::optional<module_disk_cache> disk;
    {
      std::lock_guard lock(mutex_);
      disk = disk_;
    }
    if (disk) {
      VYRE_TRY_ASSIGN(auto cached, disk->load(key, "ptx"));
      if (cached) {
        std::lock_guard lock(mutex_);
        ++stats_.disk_hits;
        return *std::move(cached);
      }
    }
    VYRE_TRY_ASSIGN(std::string ptx, nvrtc_compile(source, all, name));
    {
      std::lock_guard lock(mutex_);
      ++stats_.compiles;
    }
    if (disk) {
      VYRE_TRY(disk->store(key, "ptx", ptx));
      std::lock_guard lock(mutex_);
      ++stats_.disk_writes;
    }
    return ptx;
  }

  //! `compile` then `load`.
  expected<CUmodule> compile_and_load(std::string_view source,
                                      std::span<const std::string> options = {},
                                      std::string_view name = "vyre_module.cu") {
    VYRE_TRY_ASSIGN(const std::string ptx, compile(source, options, name));
    return load(ptx, module_format::ptx);
  }

  //! Caches compilations under `directory` (created on the first write).
  void use_disk_cache(std::filesystem::path directory) {
    std::lock_guard lock(mutex_);
    disk_.emplace(std::move(directory));
  }
  //! Caches compilations in the directory `resolve_module_cache_dir()` names.
  //! @returns its error (empty variable, none set) and leaves the disk cache off.
  expected<std::filesystem::path> use_disk_cache_from_environment() {
    VYRE_TRY_ASSIGN(std::filesystem::path directory, resolve_module_cache_dir());
    use_disk_cache(directory);
    return directory;
  }
  void disable_disk_cache() {
    std::lock_guard lock(mutex_);
    disk_.reset();
  }
  std::optional<std::filesystem::path> disk_cache_directory() const {
    std::lock_guard lock(mutex_);
    if (!disk_) return std::nullopt;
    return disk_->directory();
  }

  module_cache_stats stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
  }
  std::size_t loaded_modules() const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& [key, entries] : loaded_) n += entries.size();
    return n;
  }

  //! Unloads every module (their functions become invalid).
  expected<void> clear() noexcept {
    std::lock_guard lock(mutex_);
    if (loaded_.empty()) return {};
    auto api = driver_api::get();
    if (!api) return fail(api.error());
    detail::device_guard guard(ordinal_);
    expected<void> result;
    for (const auto& [key, entries] : loaded_)
      for (const entry& e : entries)
        if (auto unloaded = cuda_driver_check((*api)->module_unload(e.module),
                                              "module_cache::clear: cuModuleUnload failed");
            !unloaded && result)
          result = unloaded;
    loaded_.clear();
    return result;
  }

 private:
  struct entry {
    module_format format;
    std::string image;
    CUmodule module;
  };

  std::uint64_t seed(module_format format) const noexcept {
    return fnv1a64(format == module_format::ptx ? "ptx" : "cubin") ^
           static_cast<std::uint64_t>(compute_capability_);
  }

  //! The line of `log` holding the first "error", else its first line.
  static std::string first_error_line(std::string_view log) {
    std::size_t begin = 0;
    if (const std::size_t at = log.find("error"); at != std::string_view::npos) {
      const std::size_t newline = log.rfind('\n', at);
      begin = newline == std::string_view::npos ? 0 : newline + 1;
    }
    std::size_t end = log.find('\n', begin);
    if (end == std::string_view::npos) end = log.size();
    return std::string(log.substr(begin, end - begin));
  }

  static error nvrtc_error(nvrtcResult status, const char* context) noexcept {
    return error(errc::cuda_runtime, context)
        .with("nvrtc_status", static_cast<std::uint64_t>(status))
        .about(nvrtcGetErrorString(status));
  }

  static expected<std::string> nvrtc_compile(std::string_view source,
                                             const std::vector<std::string>& options,
                                             std::string_view name) {
    const std::string text(source), file(name);
    nvrtcProgram program = nullptr;
    if (const nvrtcResult r =
            nvrtcCreateProgram(&program, text.c_str(), file.c_str(), 0, nullptr, nullptr);
        r != NVRTC_SUCCESS)
      return fail(nvrtc_error(r, "module_cache::compile: nvrtcCreateProgram failed"));
    struct program_guard {
      nvrtcProgram* p;
      ~program_guard() { (void)nvrtcDestroyProgram(p); }
    } guard{&program};
    std::vector<const char*> argv;
    argv.reserve(options.size());
    for (const std::string& o : options) argv.push_back(o.c_str());
    const nvrtcResult compiled =
        nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());
    if (compiled == NVRTC_ERROR_COMPILATION) {
      std::size_t log_size = 0;
      std::string log;
      if (nvrtcGetProgramLogSize(program, &log_size) == NVRTC_SUCCESS && log_size > 1) {
        log.resize(log_size);
        if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) log.clear();
      }
      return fail(error(errc::invalid_argument, "module_cache::compile: NVRTC rejected the source")
                      .about(first_error_line(log))
                      .fix("fix the error named in the subject (the full log is NVRTC's "
                           "program log)"));
    }
    if (compiled != NVRTC_SUCCESS)
      return fail(nvrtc_error(compiled, "module_cache::compile: nvrtcCompileProgram failed"));
    std::size_t size = 0;
    if (const nvrtcResult r = nvrtcGetPTXSize(program, &size); r != NVRTC_SUCCESS)
      return fail(nvrtc_error(r, "module_cache::compile: nvrtcGetPTXSize failed"));
    std::string ptx(size, '\0');
    if (const nvrtcResult r = nvrtcGetPTX(program, ptx.data()); r != NVRTC_SUCCESS)
      return fail(nvrtc_error(r, "module_cache::compile: nvrtcGetPTX failed"));
    while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();  // size counts the terminator
    return ptx;
  }

  int ordinal_;
  int compute_capability_;
  telemetry_counters* telemetry_;
  mutable std::mutex mutex_;
  std::unordered_map<std::uint64_t, std::vector<entry>> loaded_;
  std::optional<module_disk_cache> disk_;
  module_cache_stats stats_;
};

}  // namespace vyre
