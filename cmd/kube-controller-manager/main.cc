// kube-controller-manager: entry point. Thin by design; the command lives in src/options and src/app.
#include <cstdio>
#include <cstring>

#include "version/version.h"

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--version") == 0 || std::strcmp(argv[i], "--version=true") == 0) {
      std::printf("%s\n", kcm::version::versionLine().c_str());
      return 0;
    }
  }
  // The daemon (flags, serving, leader election, controllers) is not implemented yet: say so, never pretend.
  std::fprintf(stderr, "kube-controller-manager %s: the controller manager daemon is not implemented yet\n",
               kcm::version::get().gitVersion.c_str());
  return 1;
}
