#include "version/version.h"

#include <string_view>

#include "version_stamp.h"

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
  i.gitTreeState = KCM_GIT_TREE_STATE;
  i.buildDate = KCM_BUILD_DATE;
  i.compiler = "gcc";
  i.platform = "linux/amd64";
  i.build = std::string("kcm-cpp ") + KCM_GIT_DESCRIBE + " (gcc " + __VERSION__ + ")";
  return i;
}

}  // namespace

const Info& get() {
  static const Info info = makeInfo();
  return info;
}

std::string versionLine() { return "Kubernetes " + get().gitVersion; }

std::string rawLine() {
  const Info& i = get();
  auto field = [](const char* name, const std::string& value) { return std::string(name) + ":\"" + value + "\""; };
  return "version.Info{" + field("Major", i.major) + ", " + field("Minor", i.minor) + ", " +
         field("EmulationMajor", "") + ", " + field("EmulationMinor", "") + ", " + field("MinCompatibilityMajor", "") +
         ", " + field("MinCompatibilityMinor", "") + ", " + field("GitVersion", i.gitVersion) + ", " +
         field("GitCommit", i.gitCommit) + ", " + field("GitTreeState", i.gitTreeState) + ", " +
         field("BuildDate", i.buildDate) + ", " + field("GoVersion", "") + ", " + field("Compiler", i.compiler) + ", " +
         field("Platform", i.platform) + ", " + field("Build", i.build) + "}";
}

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
