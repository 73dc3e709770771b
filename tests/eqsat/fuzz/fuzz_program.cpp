// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: any text as an egglog program, through the reader, the type checker and a
// CPU session with small limits. Whatever the text, the session returns: a program or an
// error, never a crash, a hang or an exception; an error names a category vyre-eqsat maps to
// its exit statuses.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <vyre/eqsat/session.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace eq = vyre::eqsat;
  eq::session_options options;
  options.node_limit = 2000;
  options.time_limit = 0.5;
  options.threads = 1;
  options.file_access = false;  // a fuzzer's text must not read devices or write files
  options.on_warning = [](const std::string&) {};
  eq::session s(options);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto r = s.run_text(text, "fuzz.egg");
  if (!r) {
    // Bad programs are errc::parse (compile) or invalid_argument (a failing check, a panic);
    // the machine's are out_of_memory and abi_limit; anything else is a bug.
    const vyre::errc code = r.error().code();
    if (code != vyre::errc::parse && code != vyre::errc::invalid_argument &&
        code != vyre::errc::out_of_memory && code != vyre::errc::abi_limit &&
        code != vyre::errc::io)
      std::abort();
    if (s.describe(r.error()).empty()) std::abort();
  }
  for (const auto& out : s.outputs())
    if (out.text.empty() || out.text.back() != '\n') std::abort();
  return 0;
}
