// Kubeconfig loading (--kubeconfig): YAML of any shape, base64 data fields, file references, exec plugins.
// Property: a clear error or a config, never a crash, hang or sanitizer report; a loaded config names a host
// with a scheme (what the client needs to dial). Exec plugins are only recorded by loading, never run.
#include <unistd.h>

#include <cstdio>
#include <string>

#include "client/rest_config.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kcm::fuzz::quietLogs();
  static const std::string path = [] {
    char dir[] = "/tmp/kcm-fuzz-kubeconfig-XXXXXX";
    if (!mkdtemp(dir)) std::abort();
    return std::string(dir) + "/kubeconfig";
  }();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  auto cfg = kcm::client::loadKubeconfig(path);
  if (cfg.ok() && cfg->host.rfind("http", 0) != 0) kcm::fuzz::fail("loaded a config without a scheme", cfg->host);
  if (!cfg.ok() && cfg.status().message().empty()) kcm::fuzz::fail("an error without a message");
  auto over = kcm::client::loadKubeconfig(path, "https://10.0.0.1:6443");
  if (over.ok() && over->host != "https://10.0.0.1:6443") kcm::fuzz::fail("--master did not override", over->host);
  return 0;
}
