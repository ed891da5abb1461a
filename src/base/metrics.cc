#include "base/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace kcm::metrics {

void Counter::inc(double v) {
  double cur = v_.load();
  while (!v_.compare_exchange_weak(cur, cur + v)) {
  }
}

void Gauge::add(double v) {
  double cur = v_.load();
  while (!v_.compare_exchange_weak(cur, cur + v)) {
  }
}

Histogram::Histogram(std::vector<double> buckets) : buckets_(std::move(buckets)), counts_(buckets_.size(), 0) {}

void Histogram::observe(double v) {
  std::lock_guard l(mu_);
  for (size_t i = 0; i < buckets_.size(); ++i)
    if (v <= buckets_[i]) {
      ++counts_[i];
      break;
    }
  ++count_;
  sum_ += v;
}

uint64_t Histogram::count() const {
  std::lock_guard l(mu_);
  return count_;
}

double Histogram::sum() const {
  std::lock_guard l(mu_);
  return sum_;
}

std::vector<uint64_t> Histogram::cumulative() const {
  std::lock_guard l(mu_);
  std::vector<uint64_t> out(counts_.size());
  uint64_t acc = 0;
  for (size_t i = 0; i < counts_.size(); ++i) out[i] = acc += counts_[i];
  return out;
}

std::vector<double> exponentialBuckets(double start, double factor, int count) {
  std::vector<double> b;
  for (int i = 0; i < count; ++i, start *= factor) b.push_back(start);
  return b;
}

std::vector<double> linearBuckets(double start, double width, int count) {
  std::vector<double> b;
  for (int i = 0; i < count; ++i) b.push_back(start + width * i);
  return b;
}

Registry& Registry::global() {
  static Registry r;
  return r;
}

namespace {
// The metrics upstream kcm declares BETA or STABLE (component-base StabilityLevel); every other is ALPHA.
const std::map<std::string, const char*>& declaredStability() {
  static const std::map<std::string, const char*> m = {
      {"cronjob_controller_job_creation_skew_duration_seconds", "STABLE"},
      {"disabled_metrics_total", "BETA"},
      {"endpoint_slice_controller_desired_endpoint_slices", "BETA"},
      {"endpoint_slice_controller_endpoints_added_per_sync", "BETA"},
      {"endpoint_slice_controller_endpoints_desired", "BETA"},
      {"endpoint_slice_controller_endpoints_removed_per_sync", "BETA"},
      {"endpoint_slice_controller_num_endpoint_slices", "BETA"},
      {"endpoint_slice_controller_services_count_by_traffic_distribution", "BETA"},
      {"hidden_metrics_total", "BETA"},
      {"horizontal_pod_autoscaler_controller_metric_computation_duration_seconds", "BETA"},
      {"horizontal_pod_autoscaler_controller_metric_computation_total", "BETA"},
      {"horizontal_pod_autoscaler_controller_reconciliation_duration_seconds", "BETA"},
      {"horizontal_pod_autoscaler_controller_reconciliations_total", "BETA"},
      {"job_controller_job_pods_finished_total", "STABLE"},
      {"job_controller_job_sync_duration_seconds", "STABLE"},
      {"job_controller_job_syncs_total", "STABLE"},
      {"job_controller_jobs_finished_total", "STABLE"},
      {"job_controller_pod_failures_handled_by_failure_policy_total", "BETA"},
      {"job_controller_terminated_pods_tracking_finalizer_total", "BETA"},
      {"kubernetes_build_info", "BETA"},
      {"kubernetes_feature_enabled", "BETA"},
      {"node_collector_evictions_total", "STABLE"},
      {"registered_metrics_total", "BETA"},
      {"running_managed_controllers", "BETA"},
      {"workqueue_adds_total", "BETA"},
      {"workqueue_depth", "BETA"},
      {"workqueue_longest_running_processor_seconds", "BETA"},
      {"workqueue_queue_duration_seconds", "BETA"},
      {"workqueue_retries_total", "BETA"},
      {"workqueue_unfinished_work_seconds", "BETA"},
      {"workqueue_work_duration_seconds", "BETA"},
  };
  return m;
}
}  // namespace

std::string stabilityLevel(const std::string& name) {
  auto it = declaredStability().find(name);
  return it == declaredStability().end() ? "ALPHA" : it->second;
}

std::string withStability(const std::string& name, const std::string& help) {
  // component-base prints a metric's stability level before its help; the Prometheus process collector's
  // metrics (process_*) carry none.
  if (help.rfind("[", 0) == 0 || name.rfind("process_", 0) == 0) return help;
  return "[" + stabilityLevel(name) + "] " + help;
}

Registry::Family& Registry::family(const std::string& name, Type t, const std::string& help) {
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.type = t;
    it->second.help = withStability(name, help);
  }
  return it->second;
}

Counter& Registry::counter(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard l(mu_);
  auto& f = family(name, Type::kCounter, help);
  auto& p = f.counters[labels];
  if (!p) p = std::make_unique<Counter>();
  return *p;
}

Gauge& Registry::gauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard l(mu_);
  auto& f = family(name, Type::kGauge, help);
  auto& p = f.gauges[labels];
  if (!p) p = std::make_unique<Gauge>();
  return *p;
}

Histogram& Registry::histogram(const std::string& name, const std::string& help, const std::vector<double>& buckets,
                               const Labels& labels) {
  std::lock_guard l(mu_);
  auto& f = family(name, Type::kHistogram, help);
  auto& p = f.histograms[labels];
  if (!p) p = std::make_unique<Histogram>(buckets);
  return *p;
}

std::string formatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == 0) return std::signbit(v) ? "-0" : "0";
  // The shortest digits that read back as v, then Go's 'g' layout for them: scientific when the decimal exponent
  // is below -4 or at least 6 (mantissa "d.ddd", exponent signed with two digits at least), plain otherwise.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e = sci.find('e');
  const int exp = std::atoi(sci.c_str() + e + 1);
  std::string out = v < 0 ? "-" : "";
  std::string digits;
  for (size_t i = v < 0 ? 1 : 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  if (exp < -4 || exp >= 6) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char ebuf[8];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    return out + ebuf;
  }
  if (exp < 0) return out + "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  const size_t intDigits = static_cast<size_t>(exp) + 1;
  if (digits.size() <= intDigits) return out + digits + std::string(intDigits - digits.size(), '0');
  return out + digits.substr(0, intDigits) + "." + digits.substr(intDigits);
}

namespace {

std::string fmt(double v) { return formatValue(v); }

std::string labelText(const Labels& labels, const std::string& extraKey = "", const std::string& extraVal = "") {
  if (labels.empty() && extraKey.empty()) return "";
  std::string s = "{";
  bool first = true;
  auto add = [&](const std::string& k, const std::string& v) {
    if (!first) s += ",";
    first = false;
    s += k + "=\"";
    for (char c : v) {
      if (c == '\\' || c == '"') s += '\\';
      if (c == '\n') {
        s += "\\n";
        continue;
      }
      s += c;
    }
    s += "\"";
  };
  for (const auto& [k, v] : labels) add(k, v);
  if (!extraKey.empty()) add(extraKey, extraVal);
  return s + "}";
}

}  // namespace

namespace {
// The text format's HELP escaping: backslash and line feed.
std::string escapeHelp(const std::string& help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}
}  // namespace

void Registry::setCollector(const std::string& name, const std::string& help, CollectFunc fn) {
  std::lock_guard l(mu_);
  collectors_[name] = Collector{help, std::move(fn)};
}

void Registry::removeCollector(const std::string& name) {
  std::lock_guard l(mu_);
  collectors_.erase(name);
}

void Registry::updateRegisteredCounts() {
  std::map<std::string, double> byLevel;
  {
    std::lock_guard l(mu_);
    for (const auto& [name, f] : families_)
      if (name.rfind("process_", 0) != 0 && name != "registered_metrics_total") ++byLevel[stabilityLevel(name)];
    for (const auto& [name, c] : collectors_) ++byLevel[stabilityLevel(name)];
  }
  for (const auto& [level, n] : byLevel)
    counter("registered_metrics_total", "The count of registered metrics broken by stability level and deprecation version.",
            {{"deprecated_version", ""}, {"stability_level", level}})
        .set(n);
}

std::string Registry::render() const {
  std::lock_guard l(mu_);
  // Families by name, the collected ones among them: what a collector returns is rendered in place.
  std::map<std::string, std::string> collected;
  for (const auto& [name, c] : collectors_) {
    auto series = c.fn();
    if (series.empty()) continue;
    std::string& text = collected[name];
    text = "# HELP " + name + " " + escapeHelp(withStability(name, c.help)) + "\n# TYPE " + name + " gauge\n";
    std::sort(series.begin(), series.end());
    for (const auto& [labels, v] : series) text += name + labelText(labels) + " " + fmt(v) + "\n";
  }
  std::string out;
  auto next = collected.begin();
  auto flushBefore = [&](const std::string* name) {
    for (; next != collected.end() && (!name || next->first < *name); ++next) out += next->second;
  };
  for (const auto& [name, f] : families_) {
    flushBefore(&name);
    const char* type = f.type == Type::kCounter ? "counter" : f.type == Type::kGauge ? "gauge" : "histogram";
    out += "# HELP " + name + " " + escapeHelp(f.help) + "\n# TYPE " + name + " " + type + "\n";
    for (const auto& [labels, c] : f.counters) out += name + labelText(labels) + " " + fmt(c->value()) + "\n";
    for (const auto& [labels, g] : f.gauges) out += name + labelText(labels) + " " + fmt(g->value()) + "\n";
    for (const auto& [labels, h] : f.histograms) {
      auto cum = h->cumulative();
      for (size_t i = 0; i < cum.size(); ++i)
        out += name + "_bucket" + labelText(labels, "le", fmt(h->buckets()[i])) + " " + std::to_string(cum[i]) + "\n";
      out += name + "_bucket" + labelText(labels, "le", "+Inf") + " " + std::to_string(h->count()) + "\n";
      out += name + "_sum" + labelText(labels) + " " + fmt(h->sum()) + "\n";
      out += name + "_count" + labelText(labels) + " " + std::to_string(h->count()) + "\n";
    }
  }
  flushBefore(nullptr);
  return out;
}

}  // namespace kcm::metrics
