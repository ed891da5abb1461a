#include "base/metrics.h"

#include <algorithm>
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

Registry& Registry::global() {
  static Registry r;
  return r;
}

Registry::Family& Registry::family(const std::string& name, Type t, const std::string& help) {
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.type = t;
    it->second.help = help;
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

namespace {

std::string fmt(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

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

std::string Registry::render() const {
  std::lock_guard l(mu_);
  // Families by name, the collected ones among them: what a collector returns is rendered in place.
  std::map<std::string, std::string> collected;
  for (const auto& [name, c] : collectors_) {
    auto series = c.fn();
    if (series.empty()) continue;
    std::string& text = collected[name];
    text = "# HELP " + name + " " + escapeHelp(c.help) + "\n# TYPE " + name + " gauge\n";
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
