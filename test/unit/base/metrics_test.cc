// The metrics registry's text as client_golang / component-base print it, and the component-wide families.
#include <gtest/gtest.h>

#include "app/component_metrics.h"
#include "base/duration.h"
#include "base/metrics.h"
#include "informers/shared_informer.h"
#include "options/feature_gates.h"

namespace kcm {
namespace {

bool has(const std::string& text, const std::string& line) { return text.find(line) != std::string::npos; }

TEST(Metrics, ValuesArePrintedAsGoFormatFloatG) {
  EXPECT_EQ(metrics::formatValue(0.004), "0.004");
  EXPECT_EQ(metrics::formatValue(1e-08), "1e-08");
  EXPECT_EQ(metrics::formatValue(16384), "16384");
  EXPECT_EQ(metrics::formatValue(7.985996707e+09), "7.985996707e+09");
  EXPECT_EQ(metrics::formatValue(2.592e+06), "2.592e+06");
  EXPECT_EQ(metrics::formatValue(std::numeric_limits<double>::infinity()), "+Inf");
}

TEST(Metrics, HelpCarriesUpstreamsStabilityLevel) {
  EXPECT_EQ(metrics::withStability("workqueue_adds_total", "Total adds"), "[BETA] Total adds");
  EXPECT_EQ(metrics::withStability("job_controller_job_syncs_total", "x"), "[STABLE] x");
  EXPECT_EQ(metrics::withStability("replicaset_controller_sorting_deletion_age_ratio", "x"), "[ALPHA] x");
  EXPECT_EQ(metrics::withStability("process_open_fds", "Number of open file descriptors."),
            "Number of open file descriptors.");
  EXPECT_EQ(metrics::withStability("apiserver_x", "[INTERNAL] y"), "[INTERNAL] y");
}

TEST(Metrics, RegisteredMetricsTotalCountsFamiliesByStabilityLevel) {
  metrics::Registry reg;
  reg.counter("workqueue_adds_total", "a", {{"name", "q"}});
  reg.gauge("some_alpha_gauge", "b");
  reg.histogram("another_alpha_seconds", "c", {1, 2});
  reg.gauge("process_open_fds", "not counted, as upstream's raw process collector");
  reg.updateRegisteredCounts();
  const std::string text = reg.render();
  EXPECT_TRUE(has(text, "# TYPE registered_metrics_total counter\n")) << text;
  EXPECT_TRUE(has(text, "registered_metrics_total{deprecated_version=\"\",stability_level=\"ALPHA\"} 2\n")) << text;
  EXPECT_TRUE(has(text, "registered_metrics_total{deprecated_version=\"\",stability_level=\"BETA\"} 1\n")) << text;
}

TEST(Metrics, InformerStoreResourceVersionKeepsThe15LeastSignificantDigits) {
  informers::InformerMetrics m("kube-controller-manager", "apps", "v1", "deployments");
  m.setStoreResourceVersion("12345678901234567890");
  const std::string series =
      "informer_store_resource_version{group=\"apps\",name=\"kube-controller-manager\",resource=\"deployments\","
      "version=\"v1\"} ";
  std::string text = metrics::Registry::global().render();
  EXPECT_TRUE(has(text, series + "6.7890123456789e+14\n")) << text.substr(0, 2000);
  m.setStoreResourceVersion("not-a-number");  // not recorded: the last value stays
  text = metrics::Registry::global().render();
  EXPECT_TRUE(has(text, series + "6.7890123456789e+14\n"));
  // The FIFO's families exist once the informer runs.
  EXPECT_FALSE(has(text, "informer_queued_items{group=\"apps\""));
  m.started();
  m.setQueued(3);
  text = metrics::Registry::global().render();
  EXPECT_TRUE(has(text, "informer_queued_items{group=\"apps\",name=\"kube-controller-manager\",resource=\"deployments\","
                        "version=\"v1\"} 3\n"));
  EXPECT_TRUE(has(text, "informer_processing_latency_seconds_bucket{group=\"apps\",name=\"kube-controller-manager\","
                        "resource=\"deployments\",version=\"v1\",le=\"0.001\"} 0\n"));
}

TEST(Metrics, ComponentFamiliesAreUpstreams) {
  options::FeatureGates gates;
  std::vector<std::string> warnings;
  ASSERT_TRUE(gates.set("AllAlpha=false", warnings).ok());
  app::registerComponentMetrics(gates);
  const std::string text = metrics::Registry::global().render();
  EXPECT_TRUE(has(text, "kubernetes_feature_enabled{name=\"AllAlpha\",stage=\"ALPHA\"} 0\n"));
  EXPECT_TRUE(has(text, "kubernetes_feature_enabled{name=\"AllowServiceExternalIPs\",stage=\"\"} 1\n"));
  EXPECT_TRUE(has(text, "# HELP kubernetes_feature_enabled [BETA] "));
  EXPECT_TRUE(has(text, "version_info{binary=\"1.37.2\",component=\"kube\",emulation=\"1.37\",min_compat=\"1.36\"} 1\n"))
      << text.substr(0, 3000);
  EXPECT_TRUE(has(text, "kubernetes_build_info{build_date=\""));
  EXPECT_TRUE(has(text, "disabled_metrics_total 0\n"));
  EXPECT_TRUE(has(text, "# HELP apiserver_validation_duplicate_validation_error_total [INTERNAL] "));
  EXPECT_TRUE(has(text, "apiserver_storage_data_key_generation_duration_seconds_bucket{le=\"5e-06\"} 0\n"));
}

TEST(Duration, IsPrintedAsGosDurationString) {
  using namespace std::chrono;
  EXPECT_EQ(goDuration(nanoseconds(0)), "0s");
  EXPECT_EQ(goDuration(nanoseconds(534779536)), "534.779536ms");
  EXPECT_EQ(goDuration(microseconds(9) + nanoseconds(769)), "9.769\u00b5s");
  EXPECT_EQ(goDuration(seconds(60)), "1m0s");
  EXPECT_EQ(goDuration(hours(19) + minutes(35) + seconds(35) + nanoseconds(571460329)), "19h35m35.571460329s");
}

}  // namespace
}  // namespace kcm
