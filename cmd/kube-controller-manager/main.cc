// kube-controller-manager: entry point. Thin by design; the command lives in src/app and src/options.
#include <string>
#include <vector>

#include "app/controller_manager.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return kcm::app::run(args);
}
