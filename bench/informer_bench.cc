// informer_bench: our shared informer over pods from the real apiserver. Reports initial sync time, peak RSS
// (VmHWM) and steady RSS per cached pod above the process's baseline. Peer: test/cluster/k8s/bench/informer.
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "api/gen/core_v1_codec.h"
#include "api/gen/core_v1_json.h"
#include "informers/factory.h"

namespace {
long statusBytes(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key + ":", 0) == 0) return std::stol(line.substr(key.size() + 1)) * 1024;
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s KUBECONFIG [CONTENT-TYPE]\n", argv[0]);
    return 2;
  }
  auto cfg = kcm::client::loadKubeconfig(argv[1]);
  if (!cfg.ok()) {
    std::fprintf(stderr, "%s\n", cfg.status().toString().c_str());
    return 1;
  }
  cfg->contentType = argc > 2 ? argv[2] : "application/json";
  auto c = kcm::client::RestClient::create(*cfg);
  if (!c.ok()) return 1;
  long base = statusBytes("VmRSS");
  kcm::informers::SharedInformerFactory f(*c, std::chrono::hours(12));
  auto& inf = f.forType<kcm::api::core::v1::Pod>();
  std::stop_source stop;
  auto t0 = std::chrono::steady_clock::now();
  f.start(stop.get_token());
  f.waitForCacheSync(stop.get_token());
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t n = inf.store().size();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  malloc_trim(0);
  long rss = statusBytes("VmRSS");
  std::printf("kcm-cpp (%s)\t%zu pods\tsync %.2f s\tpeak RSS %.1f MiB\tsteady RSS %.1f MiB\t%.0f bytes/cached pod\n", cfg->contentType.c_str(), n, secs,
              statusBytes("VmHWM") / 1048576.0, rss / 1048576.0, static_cast<double>(rss - base) / n);
  stop.request_stop();
  f.shutdown();
  return 0;
}
