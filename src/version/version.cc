#include "version/version.h"

#include <string_view>

namespace kcm::version {
namespace {

Info makeInfo() {
  Info i;
  i.gitVersion = KCM_KUBERNETES_VERSION;
  // "v1.37.2" -> major "1", minor "37".
  std::string_view v = i.gitVersion;
  if (!v.empty() && v.front() == 'v') v.remove_prefix(1);
  auto dot1 = v.find('.');
  auto dot2 = v.find('.', dot1 == std::string_view::npos ? dot1 : dot1 + 1);
  if (dot1 != std::string_view::npos) {
    i.major = std::string(v.substr(0, dot1));
    i.minor = std::string(v.substr(dot1 + 1, dot2 == std::string_view::npos ? v.npos : dot2 - dot1 - 1));
  }
  i.gitCommit = KCM_GIT_COMMIT;
  i.gitTreeState = "clean";
  i.buildDate = __DATE__ " " __TIME__;
  i.compiler = "gcc";
  i.platform = "linux/amd64";
  return i;
}

}  // namespace

const Info& get() {
  static const Info info = makeInfo();
  return info;
}

std::string versionLine() { return "Kubernetes " + get().gitVersion; }

std::string userAgent(const std::string& command, const std::string& clientName) {
  const Info& i = get();
  // client-go strips any pre-release/build suffix from the version and shortens the commit to 7.
  std::string ver = i.gitVersion;
  if (auto p = ver.find_first_of("-+"); p != std::string::npos) ver.resize(p);
  std::string commit = i.gitCommit.size() > 7 ? i.gitCommit.substr(0, 7) : i.gitCommit;
  std::string ua = command + "/" + ver + " (" + i.platform + ") kubernetes/" + commit;
  if (!clientName.empty()) ua += "/" + clientName;
  return ua;
}

}  // namespace kcm::version
