// kbx: wires the command line; everything else lives in the parts under src/.
#include "cli/cli.h"

int main(int argc, char** argv) {
  return kbx::cli::main(argc, argv);
}
