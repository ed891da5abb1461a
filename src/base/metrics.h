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
