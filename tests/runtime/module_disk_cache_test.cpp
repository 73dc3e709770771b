// SPDX-License-Identifier: Apache-2.0
// Module cache directory resolution and the on-disk cache (host only; no GPU, no driver).
#include <catch2/catch.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <vyre/runtime/module_disk_cache.hpp>

namespace {
namespace fs = std::filesystem;

// A fake environment: only the variables put in the map exist.
struct fake_env {
  std::map<std::string, std::string> vars;
  const char* operator()(const char* name) const {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  }
};

// A fresh directory under the build tree's temp folder, removed at scope exit.
struct temp_dir {
  fs::path path;
  temp_dir() {
    path = fs::temp_directory_path() /
           ("vyre-disk-cache-test-" +
            vyre::hex64(vyre::fnv1a64(
                std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())) +
                std::to_string(reinterpret_cast<std::uintptr_t>(this)))));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
};

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  return files;
}
}  // namespace

TEST_CASE("VYRE_PTX_CACHE_DIR wins over XDG_CACHE_HOME and HOME", "[runtime][modules]") {
  const fake_env env{
      {{"VYRE_PTX_CACHE_DIR", "/data/ptx"}, {"XDG_CACHE_HOME", "/xdg"}, {"HOME", "/home/u"}}};
  const auto dir = vyre::resolve_module_cache_dir(env);
  REQUIRE(dir.has_value());
  CHECK(*dir == fs::path("/data/ptx"));
}

TEST_CASE("XDG_CACHE_HOME is used next, with vyre/ptx-cache appended", "[runtime][modules]") {
  const fake_env env{{{"XDG_CACHE_HOME", "/xdg"}, {"HOME", "/home/u"}}};
  const auto dir = vyre::resolve_module_cache_dir(env);
  REQUIRE(dir.has_value());
  CHECK(*dir == fs::path("/xdg/vyre/ptx-cache"));
}

TEST_CASE("HOME is the last resort: ~/.cache/vyre/ptx-cache", "[runtime][modules]") {
  const fake_env env{{{"HOME", "/home/u"}}};
  const auto dir = vyre::resolve_module_cache_dir(env);
  REQUIRE(dir.has_value());
  CHECK(*dir == fs::path("/home/u/.cache/vyre/ptx-cache"));
}

TEST_CASE("an empty variable is an error naming it, never skipped", "[runtime][modules]") {
  for (const char* name : {"VYRE_PTX_CACHE_DIR", "XDG_CACHE_HOME", "HOME"}) {
    fake_env env{{{"HOME", "/home/u"}}};
    env.vars[name] = "";
    const auto dir = vyre::resolve_module_cache_dir(env);
    REQUIRE_FALSE(dir.has_value());
    CHECK(dir.error().code() == vyre::errc::invalid_argument);
    CHECK(dir.error().subject() == name);
    CHECK(dir.error().message().find("set but empty") != std::string::npos);
  }
}

TEST_CASE("a relative XDG_CACHE_HOME or HOME is rejected", "[runtime][modules]") {
  const auto xdg = vyre::resolve_module_cache_dir(fake_env{{{"XDG_CACHE_HOME", "rel/cache"}}});
  REQUIRE_FALSE(xdg.has_value());
  CHECK(xdg.error().code() == vyre::errc::invalid_argument);
  CHECK(xdg.error().subject() == "XDG_CACHE_HOME=rel/cache");
  // An explicit VYRE_PTX_CACHE_DIR may be relative: the user asked for it.
  const auto explicit_dir =
      vyre::resolve_module_cache_dir(fake_env{{{"VYRE_PTX_CACHE_DIR", "rel/ptx"}}});
  REQUIRE(explicit_dir.has_value());
  CHECK(*explicit_dir == fs::path("rel/ptx"));
}

TEST_CASE("with nothing set there is no silent fallback to /tmp", "[runtime][modules]") {
  const auto dir = vyre::resolve_module_cache_dir(fake_env{});
  REQUIRE_FALSE(dir.has_value());
  CHECK(dir.error().code() == vyre::errc::not_found);
  CHECK(dir.error().message().find("VYRE_PTX_CACHE_DIR") != std::string::npos);
}

TEST_CASE("fnv1a64 and hex64 match known values", "[runtime][modules]") {
  CHECK(vyre::fnv1a64("") == 0xcbf29ce484222325ull);
  CHECK(vyre::fnv1a64("a") == 0xaf63dc4c8601ec8cull);
  CHECK(vyre::hex64(0xaf63dc4c8601ec8cull) == "af63dc4c8601ec8c");
  CHECK(vyre::hex64(1) == "0000000000000001");
  static_assert(vyre::fnv1a64("foobar") == 0x85944171f73967e8ull);
}

TEST_CASE("a stored entry round-trips and leaves no temporary file", "[runtime][modules]") {
  temp_dir tmp;
  const vyre::module_disk_cache cache(tmp.path / "nested" / "ptx-cache");
  const std::string key = "nvrtc 13.0\n--gpu-architecture=compute_90\nk.cu\n__global__ void k(){}";
  const std::string ptx = std::string(".version 9.0\n.target sm_90\n") + '\0' + "binary tail";
  auto miss = cache.load(key, "ptx");
  REQUIRE(miss.has_value());
  CHECK_FALSE(miss->has_value());
  REQUIRE(cache.store(key, "ptx", ptx).has_value());
  auto hit = cache.load(key, "ptx");
  REQUIRE(hit.has_value());
  REQUIRE(hit->has_value());
  CHECK(**hit == ptx);
  const auto files = files_in(cache.directory());
  REQUIRE(files.size() == 1);
  CHECK(files[0] == cache.entry_path(key, "ptx"));
  // Overwriting is atomic too and keeps one file.
  REQUIRE(cache.store(key, "ptx", "second").has_value());
  CHECK(**cache.load(key, "ptx") == "second");
  CHECK(files_in(cache.directory()).size() == 1);
}

TEST_CASE("an entry for another key with the same file name reads as a miss",
          "[runtime][modules]") {
  temp_dir tmp;
  const vyre::module_disk_cache cache(tmp.path);
  REQUIRE(cache.store("key A", "ptx", "payload A").has_value());
  // Simulate a hash collision: key B's file holds key A's entry.
  fs::copy_file(cache.entry_path("key A", "ptx"), cache.entry_path("key B", "ptx"));
  auto loaded = cache.load("key B", "ptx");
  REQUIRE(loaded.has_value());
  CHECK_FALSE(loaded->has_value());
}

TEST_CASE("damaged entries read as misses", "[runtime][modules]") {
  const std::string key = "the key";
  const std::string good = std::string(vyre::module_disk_cache::magic) + "7\n3\nthe keyabc";
  REQUIRE(vyre::module_disk_cache::parse(good, key) == std::optional<std::string>("abc"));
  CHECK_FALSE(vyre::module_disk_cache::parse(good.substr(0, good.size() - 1), key).has_value());
  CHECK_FALSE(vyre::module_disk_cache::parse(good + "x", key).has_value());
  CHECK_FALSE(vyre::module_disk_cache::parse("garbage", key).has_value());
  CHECK_FALSE(vyre::module_disk_cache::parse("", key).has_value());
  CHECK_FALSE(vyre::module_disk_cache::parse(
                  std::string(vyre::module_disk_cache::magic) + "7\n99999999999999999999\n", key)
                  .has_value());
  CHECK_FALSE(vyre::module_disk_cache::parse(
                  std::string(vyre::module_disk_cache::magic) + "x7\n3\nthe keyabc", key)
                  .has_value());
}

TEST_CASE("an unwritable directory is an io error naming the path", "[runtime][modules]") {
  temp_dir tmp;
  // A regular file where the directory should be: create_directories must fail.
  const fs::path blocker = tmp.path / "not-a-dir";
  std::ofstream(blocker) << "x";
  const vyre::module_disk_cache cache(blocker / "cache");
  const auto stored = cache.store("k", "ptx", "p");
  REQUIRE_FALSE(stored.has_value());
  CHECK(stored.error().code() == vyre::errc::io);
  CHECK(stored.error().subject().find("not-a-dir") != std::string_view::npos);
}

TEST_CASE("concurrent writers of one entry leave one complete file", "[runtime][modules]") {
  temp_dir tmp;
  const vyre::module_disk_cache cache(tmp.path);
  const std::string payload(1 << 16, 'p');
  std::atomic<int> failures{0};  // Catch2 assertions are not thread-safe
  std::vector<std::thread> writers;
  for (int i = 0; i < 8; ++i)
    writers.emplace_back([&] {
      for (int k = 0; k < 10; ++k)
        if (!cache.store("shared key", "ptx", payload)) failures.fetch_add(1);
    });
  for (auto& w : writers) w.join();
  CHECK(failures.load() == 0);
  CHECK(files_in(tmp.path).size() == 1);
  CHECK(**cache.load("shared key", "ptx") == payload);
}
