// kube-controller-manager: entry point. Thin by design; the command lives in src/app and src/options.
#include <malloc.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "app/controller_manager.h"

int main(int argc, char** argv) {
  // glibc gives a thread that finds every arena busy an arena of its own, up to 8 per core, and each keeps the
  // pieces its thread freed: with the executor's start-up burst of threads that is 16 arenas on 2 cores, and RSS
  // creeping as they fragment. Two are plenty for our few busy threads (each also has its tcache). The operator's
  // MALLOC_ARENA_MAX, when set, wins.
  if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, 2);
  std::vector<std::string> args(argv + 1, argv + argc);
  return kcm::app::run(args);
}
