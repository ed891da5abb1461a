#pragma once
// A small Prometheus metrics registry: counters, gauges and histograms with labels, rendered in the text
// exposition format for /metrics. Thread-safe; updates are lock-free per series after creation.
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kcm::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void inc(double v = 1);
  // For totals kept elsewhere (process CPU seconds read from /proc).
  void set(double v) { v_.store(v); }
  double value() const { return v_.load(); }

 private:
  std::atomic<double> v_{0};
};

class Gauge {
 public:
  void set(double v) { v_.store(v); }
  void add(double v);
  double value() const { return v_.load(); }

 private:
  std::atomic<double> v_{0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> buckets);
  void observe(double v);
  uint64_t count() const;
  double sum() const;
  const std::vector<double>& buckets() const { return buckets_; }
  std::vector<uint64_t> cumulative() const;

 private:
  std::vector<double> buckets_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  double sum_ = 0;
};

std::vector<double> exponentialBuckets(double start, double factor, int count);
std::vector<double> linearBuckets(double start, double width, int count);

// A sample value as client_golang writes it (Go's strconv.FormatFloat(v, 'g', -1, 64)): 0.004, 1e-08, 16384,
// 7.985996707e+09, +Inf.
std::string formatValue(double v);
// A family's help as printed: "[ALPHA] " (component-base's default stability level) unless it names its own
// ("[BETA] ...") or is one of the process collector's (process_*), which carry none; the level is upstream's
// declaration for the name (stabilityLevel).
std::string withStability(const std::string& name, const std::string& help);
// The stability level upstream declares for a metric name: STABLE, BETA or (the default) ALPHA.
std::string stabilityLevel(const std::string& name);

class Registry {
 public:
  static Registry& global();
  Counter& counter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& gauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& histogram(const std::string& name, const std::string& help, const std::vector<double>& buckets,
                       const Labels& labels = {});
  // A gauge family whose series are read at scrape time (component-base's custom collectors): fn returns each
  // series' labels (sorted by name, as client_golang prints them) and value; a family with no series is not
  // printed. Setting a name again replaces its function; removeCollector drops it (before what fn reads goes away).
  using CollectFunc = std::function<std::vector<std::pair<Labels, double>>()>;
  void setCollector(const std::string& name, const std::string& help, CollectFunc fn);
  void removeCollector(const std::string& name);
  // registered_metrics_total{stability_level,deprecated_version}: the families known now (process_* aside, as
  // upstream's raw Prometheus collector is not counted) by stability level. Called before render().
  void updateRegisteredCounts();
  // Prometheus text format 0.0.4.
  std::string render() const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Family {
    Type type;
    std::string help;
    std::map<Labels, std::unique_ptr<Counter>> counters;
    std::map<Labels, std::unique_ptr<Gauge>> gauges;
    std::map<Labels, std::unique_ptr<Histogram>> histograms;
  };
  Family& family(const std::string& name, Type t, const std::string& help);
  struct Collector {
    std::string help;
    CollectFunc fn;
  };
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;
  std::map<std::string, Collector> collectors_;
};

}  // namespace kcm::metrics
