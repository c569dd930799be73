#pragma once

namespace kbx::cli {

/// Parses the command line and runs the subcommand; returns the exit code.
int main(int argc, char** argv);

}  // namespace kbx::cli
