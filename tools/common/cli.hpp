// SPDX-License-Identifier: Apache-2.0
//! @file
//! What vyre's command-line tools share: their exit statuses, one-line messages, and the CLI11
//! parse that ends in `--help`'s text or one usage line on stderr.
#pragma once

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

namespace vyre_tool {

inline constexpr int exit_ok = 0;         //!< success
inline constexpr int exit_failure = 1;    //!< the machine failed (a CUDA error, out of memory)
inline constexpr int exit_bad_input = 2;  //!< bad input or bad usage
inline constexpr int exit_no_device = 3;  //!< `--device gpu` where that device is not usable

//! `text` with its line breaks turned into spaces (every message is one line on stderr).
inline std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\r', ' ');
  return text;
}

//! Parses the command line into `app`. Nothing when the tool goes on; else the status to exit
//! with, after `--help`'s text or one line "<app name>: <problem> (run with --help for usage)"
//! on stderr.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s (run with --help for usage)\n", app.get_name().c_str(),
                 one_line(e.what()).c_str());
    return exit_bad_input;
  }
  return std::nullopt;
}

}  // namespace vyre_tool
