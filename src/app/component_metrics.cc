#include "app/component_metrics.h"

#include <string>
#include <utility>
#include <vector>

#include "base/metrics.h"
#include "version/version.h"

namespace kcm::app {
namespace {

// component-base prints a gate's PreRelease: "ALPHA", "BETA", "DEPRECATED", and "" for GA.
std::string stageLabel(const std::string& stage) {
  if (stage == "GA") return "";
  std::string s = stage;
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Metrics of k8s.io/apiserver and kube-aggregator library code that upstream kcm links (and so registers) but
// never runs: always zero there, as here. Registered so dashboards and alerts that name them find them.
void registerLibraryMetrics(metrics::Registry& reg) {
  for (const auto& [name, help] : std::vector<std::pair<const char*, const char*>>{
           {"aggregator_discovery_aggregation_count_total", "Counter of number of times discovery was aggregated"},
           {"apiserver_audit_event_total", "Counter of audit events generated and sent to the audit backend."},
           {"apiserver_audit_requests_rejected_total",
            "Counter of apiserver requests rejected due to an error in audit logging backend."},
           {"apiserver_kube_aggregator_x509_insecure_sha1_total",
            "Counts the number of requests to servers with insecure SHA1 signatures in their serving certificate OR "
            "the number of connection failures due to the insecure SHA1 signatures (either/or, based on the runtime "
            "environment)"},
           {"apiserver_kube_aggregator_x509_missing_san_total",
            "Counts the number of requests to servers missing SAN extension in their serving certificate OR the "
            "number of connection failures due to the lack of x509 certificate SAN extension missing (either/or, "
            "based on the runtime environment)"},
           {"apiserver_storage_data_key_generation_failures_total",
            "Total number of failed data encryption key(DEK) generation operations."},
           {"apiserver_storage_envelope_transformation_cache_misses_total",
            "Total number of cache misses while accessing key decryption key(KEK)."},
           {"apiserver_validation_declarative_validation_mismatch_total",
            "[BETA] Number of times declarative validation results differed from handwritten validation results for "
            "core types."},
           {"apiserver_validation_declarative_validation_panic_total",
            "[BETA] Number of times declarative validation has panicked during validation."},
           {"apiserver_validation_duplicate_validation_error_total",
            "[INTERNAL] Number of duplicate validation errors during validation."},
           {"apiserver_webhooks_x509_insecure_sha1_total",
            "[BETA] Counts the number of requests to servers with insecure SHA1 signatures in their serving "
            "certificate OR the number of connection failures due to the insecure SHA1 signatures (either/or, based "
            "on the runtime environment)"},
           {"apiserver_webhooks_x509_missing_san_total",
            "[BETA] Counts the number of requests to servers missing SAN extension in their serving certificate OR "
            "the number of connection failures due to the lack of x509 certificate SAN extension missing (either/or, "
            "based on the runtime environment)"},
       })
    reg.counter(name, help);
  reg.gauge("apiserver_envelope_encryption_dek_cache_fill_percent",
            "Percent of the cache slots currently occupied by cached DEKs.");
  const std::vector<double> cel = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  reg.histogram("apiserver_cel_compilation_duration_seconds", "[BETA] CEL compilation time in seconds.", cel);
  reg.histogram("apiserver_cel_evaluation_duration_seconds", "[BETA] CEL evaluation time in seconds.", cel);
  reg.histogram("apiserver_storage_data_key_generation_duration_seconds",
                "Latencies in seconds of data encryption key(DEK) generation operations.",
                metrics::exponentialBuckets(5e-6, 2, 14));
}

}  // namespace

void registerComponentMetrics(const options::FeatureGates& gates) {
  auto& reg = metrics::Registry::global();
  const version::Info& v = version::get();
  // The binary is the pinned release; emulation and minimum compatibility are its defaults (this minor, the one
  // before), as upstream reports them without --emulated-version.
  const std::string binary = v.gitVersion.size() > 1 && v.gitVersion[0] == 'v' ? v.gitVersion.substr(1) : v.gitVersion;
  const int minor = std::atoi(v.minor.c_str());
  reg.gauge("version_info",
            "Provides the compatibility version info of the component. The component label is the name of the "
            "component, usually kube, but is relevant for aggregated-apiservers.",
            {{"binary", binary},
             {"component", "kube"},
             {"emulation", v.major + "." + std::to_string(minor)},
             {"min_compat", v.major + "." + std::to_string(minor - 1)}})
      .set(1);
  reg.gauge("kubernetes_build_info",
            "A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, "
            "build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
            {{"build_date", v.buildDate},
             {"compiler", v.compiler},
             {"git_commit", v.gitCommit},
             {"git_tree_state", v.gitTreeState},
             {"git_version", v.gitVersion},
             {"go_version", ""},
             {"major", v.major},
             {"minor", v.minor},
             {"platform", v.platform}})
      .set(1);
  for (const auto& spec : options::knownFeatureGates())
    reg.gauge("kubernetes_feature_enabled", "This metric records the data about the stage and enablement of a k8s feature.",
              {{"name", spec.name}, {"stage", stageLabel(spec.stage)}})
        .set(gates.enabled(spec.name) ? 1 : 0);
  // Nothing is disabled or hidden here (--disabled-metrics and --show-hidden-metrics-for-version are accepted
  // without effect), so these stay 0; registered_metrics_total is counted when /metrics is rendered.
  registerLibraryMetrics(reg);
  reg.counter("disabled_metrics_total", "The count of disabled metrics.");
  reg.counter("hidden_metrics_total", "The count of hidden metrics.");
  reg.counter("cardinality_enforcement_unexpected_categorizations_total",
              "The count of unexpected categorizations during cardinality enforcement.");
}

}  // namespace kcm::app
