#pragma once
// Build version information, reported as upstream's k8s.io/component-base/version does.
// We reproduce kube-controller-manager at the Kubernetes release the test control plane is pinned to,
// so gitVersion is that release; gitCommit is this project's own commit, stamped at build time
// (cmake/version_stamp.cmake).
// Thread-safety: immutable after static initialisation.
#include <string>

namespace kcm::version {

struct Info {
  std::string major;
  std::string minor;
  std::string gitVersion;
  std::string gitCommit;
  std::string gitTreeState;
  std::string buildDate;
  std::string compiler;
  std::string platform;
  // This project's own build: `git describe` of the commit and the C++ compiler (--version=raw shows it).
  std::string build;
};

const Info& get();

// "Kubernetes v1.37.2", the line `--version` prints.
std::string versionLine();

// `--version=raw`: upstream's version.Info in Go's %#v shape (same fields, same order; GoVersion is empty, this is
// no Go build), with our build appended as a last field.
std::string rawLine();

// client-go's DefaultKubernetesUserAgent: "<command>/<version> (<os>/<arch>) kubernetes/<commit7>",
// plus "/<clientName>" when the client is per controller (rest.AddUserAgent).
std::string userAgent(const std::string& command, const std::string& clientName = "");

}  // namespace kcm::version
