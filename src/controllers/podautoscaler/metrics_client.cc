#include "controllers/podautoscaler/metrics_client.h"

#include <nlohmann/json.hpp>

#include "api/support/types.h"
#include "base/log.h"
#include "options/options.h"

namespace kcm::controllers::podautoscaler {
namespace {

using Json = nlohmann::json;

WallTime parseTime(const Json& j, const char* field) {
  if (!j.contains(field) || !j[field].is_string()) return {};
  auto t = api::Time::parse(j[field].get<std::string>());
  if (!t || t->isZero()) return {};
  return WallTime(std::chrono::seconds(t->unixSeconds));
}

int64_t milli(const Json& v) {
  if (v.is_string())
    if (auto q = api::Quantity::parse(v.get<std::string>())) return q->milliValue();
  if (v.is_number_integer()) return v.get<int64_t>() * 1000;
  return 0;
}

class RestMetricsClient final : public MetricsClient {
 public:
  RestMetricsClient(std::shared_ptr<client::RestClient> c, std::shared_ptr<client::DiscoveryClient> d)
      : client_(std::move(c)), discovery_(std::move(d)) {}

  Result<Json> getJson(const std::string& path, std::vector<std::pair<std::string, std::string>> query) {
    client::Request req;
    req.path = path;
    req.query = std::move(query);
    auto r = client_->send(req);
    if (!r.ok()) return r.status();
    auto j = Json::parse(r->body, nullptr, false);
    if (!j.is_object()) return Status(StatusCode::kInternal, "unable to decode the response of " + path);
    return j;
  }

  Result<std::pair<PodMetricsInfo, WallTime>> getResourceMetric(const std::string& resource, const std::string& ns,
                                                                const api::Selector& selector,
                                                                const std::string& container) override {
    std::vector<std::pair<std::string, std::string>> q;
    if (auto s = selector.str(); !s.empty()) q.emplace_back("labelSelector", s);
    auto list = getJson("/apis/metrics.k8s.io/v1beta1/namespaces/" + ns + "/pods", q);
    if (!list.ok())
      return Status(list.status().code(), "unable to fetch metrics from resource metrics API: " + list.status().message());
    const Json items = list->value("items", Json::array());
    if (items.empty()) return Status(StatusCode::kNotFound, "no metrics returned from resource metrics API");
    PodMetricsInfo res;
    for (const auto& m : items) {
      const std::string name = m["metadata"].value("name", "");
      const std::string mns = m["metadata"].value("namespace", ns);
      PodMetric pm;
      pm.timestamp = parseTime(m, "timestamp");
      if (auto w = options::parseDuration(m.value("window", "")); w.ok())
        pm.window = std::chrono::duration_cast<std::chrono::seconds>(*w);
      const Json containers = m.value("containers", Json::array());
      if (!container.empty()) {  // getContainerMetrics
        bool found = false;
        for (const auto& c : containers) {
          if (c.value("name", "") != container) continue;
          found = true;
          const Json usage = c.value("usage", Json::object());
          if (usage.contains(resource)) {
            pm.value = milli(usage[resource]);
            res[name] = pm;
          }
          break;
        }
        if (!found) KLOG_V(2, "\"Missing container metric\" container=\"" + container + "\" pod=\"" + mns + "/" + name + "\"");
        continue;
      }
      bool missing = containers.empty();  // getPodMetrics
      for (const auto& c : containers) {
        const Json usage = c.value("usage", Json::object());
        if (!usage.contains(resource)) {
          missing = true;
          KLOG_V(2, "\"Missing resource metric\" resourceMetric=\"" + resource + "\" pod=\"" + mns + "/" + name + "\"");
          break;
        }
        pm.value += milli(usage[resource]);
      }
      if (!missing) res[name] = pm;
    }
    return std::make_pair(std::move(res), parseTime(items[0], "timestamp"));
  }

  static std::vector<std::pair<std::string, std::string>> customQuery(const api::Selector* selector,
                                                                      const api::Selector& metricSelector) {
    std::vector<std::pair<std::string, std::string>> q;
    if (selector)
      if (auto s = selector->str(); !s.empty()) q.emplace_back("labelSelector", s);
    if (auto s = metricSelector.str(); !s.empty()) q.emplace_back("metricLabelSelector", s);
    return q;
  }

  Result<std::pair<PodMetricsInfo, WallTime>> getRawMetric(const std::string& metricName, const std::string& ns,
                                                           const api::Selector& selector,
                                                           const api::Selector& metricSelector) override {
    auto list = getJson(std::string(kCustomPath) + "/namespaces/" + ns + "/pods/*/" + metricName,
                        customQuery(&selector, metricSelector));
    if (!list.ok())
      return Status(list.status().code(), "unable to fetch metrics from custom metrics API: " + list.status().message());
    const Json items = list->value("items", Json::array());
    if (items.empty()) return Status(StatusCode::kNotFound, "no metrics returned from custom metrics API");
    PodMetricsInfo res;
    for (const auto& m : items) {
      PodMetric pm;
      pm.timestamp = parseTime(m, "timestamp");
      pm.window = m.contains("windowSeconds") && m["windowSeconds"].is_number_integer()
                      ? std::chrono::seconds(m["windowSeconds"].get<int64_t>())
                      : kMetricServerDefaultMetricWindow;
      pm.value = milli(m.value("value", Json()));
      res[m.value("describedObject", Json::object()).value("name", "")] = pm;
    }
    return std::make_pair(std::move(res), parseTime(items[0], "timestamp"));
  }

  Result<std::pair<int64_t, WallTime>> getObjectMetric(const std::string& metricName, const std::string& ns,
                                                       const api::autoscaling::v2::CrossVersionObjectReference& ref,
                                                       const api::Selector& metricSelector) override {
    auto slash = ref.apiVersion.find('/');
    const std::string group = slash == std::string::npos ? "" : ref.apiVersion.substr(0, slash);
    std::string path;
    if (ref.kind == "Namespace" && group.empty()) {
      path = std::string(kCustomPath) + "/namespaces/" + ns + "/metrics/" + metricName;
    } else {
      auto mapping = discovery_->resourceFor(group, "", ref.kind);
      if (!mapping.ok())
        return Status(mapping.status().code(), "unable to fetch metrics from custom metrics API: " +
                                                   ("no matches for kind \"" + ref.kind + "\" in group \"" + group + "\""));
      const std::string resource = group.empty() ? mapping->resource : mapping->resource + "." + group;
      path = std::string(kCustomPath) + "/namespaces/" + ns + "/" + resource + "/" + ref.name + "/" + metricName;
    }
    auto list = getJson(path, customQuery(nullptr, metricSelector));
    if (!list.ok())
      return Status(list.status().code(), "unable to fetch metrics from custom metrics API: " + list.status().message());
    const Json items = list->value("items", Json::array());
    if (items.size() != 1)
      return Status(StatusCode::kInternal,
                    "unable to fetch metrics from custom metrics API: the custom metrics API server returned " +
                        std::to_string(items.size()) + " results when we asked for exactly one");
    return std::make_pair(milli(items[0].value("value", Json())), parseTime(items[0], "timestamp"));
  }

  Result<std::pair<std::vector<int64_t>, WallTime>> getExternalMetric(const std::string& metricName,
                                                                      const std::string& ns,
                                                                      const api::Selector& selector) override {
    std::vector<std::pair<std::string, std::string>> q;
    if (auto s = selector.str(); !s.empty()) q.emplace_back("labelSelector", s);
    auto list = getJson("/apis/external.metrics.k8s.io/v1beta1/namespaces/" + ns + "/" + metricName, q);
    if (!list.ok())
      return Status(list.status().code(), "unable to fetch metrics from external metrics API: " + list.status().message());
    const Json items = list->value("items", Json::array());
    if (items.empty()) return Status(StatusCode::kNotFound, "no metrics returned from external metrics API");
    std::vector<int64_t> res;
    for (const auto& m : items) res.push_back(milli(m.value("value", Json())));
    return std::make_pair(std::move(res), parseTime(items[0], "timestamp"));
  }

 private:
  // The version upstream's AvailableAPIsGetter settles on when the server offers it.
  static constexpr const char* kCustomPath = "/apis/custom.metrics.k8s.io/v1beta2";
  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::DiscoveryClient> discovery_;
};

}  // namespace

std::unique_ptr<MetricsClient> newRESTMetricsClient(std::shared_ptr<client::RestClient> client,
                                                    std::shared_ptr<client::DiscoveryClient> discovery) {
  return std::make_unique<RestMetricsClient>(std::move(client), std::move(discovery));
}

Result<UtilizationRatio> getResourceUtilizationRatio(const PodMetricsInfo& metrics,
                                                     const std::map<std::string, int64_t>& requests,
                                                     int32_t targetUtilization) {
  int64_t metricsTotal = 0, requestsTotal = 0, entries = 0;
  for (const auto& [pod, m] : metrics) {
    auto it = requests.find(pod);
    if (it == requests.end()) continue;
    metricsTotal += m.value;
    requestsTotal += it->second;
    ++entries;
  }
  if (requestsTotal == 0) return Status(StatusCode::kInvalidArgument, "no metrics returned matched known pods");
  UtilizationRatio r;
  r.utilization = static_cast<int32_t>(metricsTotal * 100 / requestsTotal);
  r.ratio = static_cast<double>(r.utilization) / static_cast<double>(targetUtilization);
  r.rawAverage = metricsTotal / entries;
  return r;
}

std::pair<double, int64_t> getMetricUsageRatio(const PodMetricsInfo& metrics, int64_t targetUsage) {
  int64_t total = 0;
  for (const auto& [pod, m] : metrics) total += m.value;
  const int64_t current = total / static_cast<int64_t>(metrics.size());
  return {static_cast<double>(current) / static_cast<double>(targetUsage), current};
}

}  // namespace kcm::controllers::podautoscaler
