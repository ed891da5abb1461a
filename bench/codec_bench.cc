// codec_bench: decode and encode throughput of a PodList with our generated codec, and heap bytes per decoded
// pod (glibc mallinfo2 growth for each of five lists kept alive, median). The peer is
// test/cluster/k8s/bench/decode (client-go) on the same file; bench/run-codec-bench.sh runs both.
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "api/gen/core_v1_codec.h"

using namespace kcm::api;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PODLIST.json ITERATIONS\n", argv[0]);
    return 2;
  }
  std::ifstream f(argv[1], std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string data = ss.str();
  const int iters = std::atoi(argv[2]);
  auto decodeOnce = [&](core::v1::PodList& out) {
    kcm::Status s = decodeJson(data, out);
    if (!s.ok()) {
      std::fprintf(stderr, "decode: %s\n", s.toString().c_str());
      std::exit(1);
    }
  };
  {
    core::v1::PodList warm;
    decodeOnce(warm);
  }
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    core::v1::PodList l;
    decodeOnce(l);
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double mb = static_cast<double>(data.size()) * iters / 1e6;

  // As the client-go peer: five lists decoded and kept one after another, the in-use heap's growth per pod for
  // each (glibc mallinfo2, chunk sizes with their headers), median of the five.
  malloc_trim(0);
  std::vector<std::unique_ptr<core::v1::PodList>> lists;
  std::vector<double> deltas;
  size_t prev = mallinfo2().uordblks;
  for (int i = 0; i < 5; ++i) {
    lists.push_back(std::make_unique<core::v1::PodList>());
    decodeOnce(*lists.back());
    const size_t now = mallinfo2().uordblks;
    deltas.push_back(static_cast<double>(now - prev) / static_cast<double>(lists.back()->items.size()));
    prev = now;
  }
  std::sort(deltas.begin(), deltas.end());
  const double perPod = deltas[2];
  const auto& kept = lists.back();

  std::string out;
  auto e0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) out = encodeJson(*kept);
  double esecs = std::chrono::duration<double>(std::chrono::steady_clock::now() - e0).count();
  std::printf("kcm-cpp\t%zu pods\tdecode %.1f MB/s\tencode %.1f MB/s\t%.0f bytes/pod\n", kept->items.size(),
              mb / secs, static_cast<double>(out.size()) * iters / 1e6 / esecs, perPod);
  return 0;
}
