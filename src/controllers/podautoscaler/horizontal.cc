#include "controllers/podautoscaler/horizontal.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <thread>

#include "api/gen/autoscaling_v1_json.h"
#include "api/gen/autoscaling_v2_json.h"
#include "api/gen/core_v1_json.h"
#include "base/log.h"
#include "base/metrics.h"
#include "client/typed_client.h"
#include "quota/resources.h"

namespace kcm::controllers::podautoscaler {

using api::autoscaling::v2::HorizontalPodAutoscalerCondition;
using api::autoscaling::v2::HorizontalPodAutoscalerStatus;
using api::autoscaling::v2::HPAScalingRules;
using api::autoscaling::v2::MetricSpec;
using api::autoscaling::v2::MetricStatus;
using api::autoscaling::v2::MetricValueStatus;

namespace {

constexpr double kScaleUpLimitFactor = 2.0;
constexpr double kScaleUpLimitMinimum = 4.0;
constexpr const char* kSubsystem = "horizontal_pod_autoscaler_controller_";

// upstream FixedItemIntervalRateLimiter: every requeue waits the sync period.
class FixedItemIntervalRateLimiter final : public runtime::ItemRateLimiter {
 public:
  explicit FixedItemIntervalRateLimiter(Clock::Duration d) : d_(d) {}
  Clock::Duration when(const std::string&) override { return d_; }
  void forget(const std::string&) override {}
  int numRequeues(const std::string&) override { return 1; }

 private:
  Clock::Duration d_;
};

std::string hpaKey(const HorizontalPodAutoscaler& h) { return h.metadata.namespace_ + "/" + h.metadata.name; }

// A metric's selector as Go's %+v prints a *metav1.LabelSelector (its generated String()): upstream puts it in the
// names of external metrics, and so in SuccessfulRescale messages and ScalingActive conditions.
std::string selectorText(const api::meta::v1::LabelSelector* s) {
  if (!s) return "nil";
  std::string labels = "map[string]string{";
  for (const auto& [k, v] : s->matchLabels) labels += k + ": " + v + ",";  // sorted by key, as Go's
  std::string exprs = "[]LabelSelectorRequirement{";
  for (const auto& r : s->matchExpressions) {
    std::string values;
    for (const auto& v : r.values) values += (values.empty() ? "" : " ") + v;
    exprs += "LabelSelectorRequirement{Key:" + r.key + ",Operator:" + r.operator_ + ",Values:[" + values + "],},";
  }
  return "&LabelSelector{MatchLabels:" + labels + "},MatchExpressions:" + exprs + "},}";
}

template <class T>
const T* boxPtr(const api::Box<T>& b) {
  return b ? &*b : nullptr;
}

metrics::Registry& reg() { return metrics::Registry::global(); }

const std::vector<double>& durationBuckets() {
  static const std::vector<double> b = metrics::exponentialBuckets(0.001, 2, 15);
  return b;
}

void observeReconciliation(const std::string& action, const std::string& error, double seconds) {
  static const std::string help =
      "Number of reconciliations of HPA controller. The label 'action' should be either 'scale_down', 'scale_up', "
      "or 'none'. Also, the label 'error' should be either 'spec', 'internal', or 'none'. Note that if both spec and "
      "internal errors happen during a reconciliation, the first one to occur is reported in `error` label.";
  static const std::string hhelp =
      "The time(seconds) that the HPA controller takes to reconcile once. The label 'action' should be either "
      "'scale_down', 'scale_up', or 'none'. Also, the label 'error' should be either 'spec', 'internal', or 'none'. "
      "Note that if both spec and internal errors happen during a reconciliation, the first one to occur is "
      "reported in `error` label.";
  reg().counter(std::string(kSubsystem) + "reconciliations_total", "[BETA] " + help, {{"action", action}, {"error", error}}).inc();
  reg().histogram(std::string(kSubsystem) + "reconciliation_duration_seconds", "[BETA] " + hhelp, durationBuckets(),
                  {{"action", action}, {"error", error}}).observe(seconds);
}

void observeMetricComputation(const std::string& action, const std::string& error, double seconds,
                              const std::string& type) {
  static const std::string help =
      "Number of metric computations. The label 'action' should be either 'scale_down', 'scale_up', or 'none'. "
      "Also, the label 'error' should be either 'spec', 'internal', or 'none'. The label 'metric_type' corresponds "
      "to HPA.spec.metrics[*].type";
  static const std::string hhelp =
      "The time(seconds) that the HPA controller takes to calculate one metric. The label 'action' should be either "
      "'scale_down', 'scale_up', or 'none'. The label 'error' should be either 'spec', 'internal', or 'none'. The "
      "label 'metric_type' corresponds to HPA.spec.metrics[*].type";
  metrics::Labels l = {{"action", action}, {"error", error}, {"metric_type", type}};
  reg().counter(std::string(kSubsystem) + "metric_computation_total", "[BETA] " + help, l).inc();
  reg().histogram(std::string(kSubsystem) + "metric_computation_duration_seconds", "[BETA] " + hhelp,
                  durationBuckets(), l).observe(seconds);
}

metrics::Gauge& numHPAs() {
  return reg().gauge(std::string(kSubsystem) + "num_horizontal_pod_autoscalers",
                     "[ALPHA] Current number of controlled HPA objects.");
}

double seconds(Clock::Duration d) { return std::chrono::duration<double>(d).count(); }

// Quantity.AsApproximateFloat64 for a tolerance ("0.05", "50m", "1e-2").
double approximateFloat(const api::Quantity& q) {
  char* end = nullptr;
  const std::string& s = q.str();
  double v = std::strtod(s.c_str(), &end);
  if (!s.empty() && end && *end == '\0') return v;
  return static_cast<double>(q.milliValue()) / 1000.0;
}

// resource.NewMilliQuantity(v, DecimalSI / BinarySI) as canonical text.
api::Quantity milliQuantity(int64_t v, bool binary = false) {
  return quota::Amount::ofMilli(v, binary ? quota::Format::kBinarySI : quota::Format::kDecimalSI).toQuantity();
}

}  // namespace

// --- selector tracker ---

bool HpaSelectorTracker::putIfAbsent(const std::string& key) {
  std::lock_guard l(mu_);
  return selectors_.emplace(key, api::Selector::nothing()).second;
}

bool HpaSelectorTracker::putIfPresent(const std::string& key, const api::Selector& s) {
  std::lock_guard l(mu_);
  auto it = selectors_.find(key);
  if (it == selectors_.end()) return false;
  it->second = s;
  return true;
}

void HpaSelectorTracker::remove(const std::string& key) {
  std::lock_guard l(mu_);
  selectors_.erase(key);
}

size_t HpaSelectorTracker::size() const {
  std::lock_guard l(mu_);
  return selectors_.size();
}

std::vector<std::string> HpaSelectorTracker::hpasMatchingPods(const std::string& ns, const std::vector<PodPtr>& pods,
                                                              size_t limit) const {
  std::lock_guard l(mu_);
  std::vector<std::string> out;
  const std::string prefix = ns + "/";
  for (auto it = selectors_.lower_bound(prefix); it != selectors_.end() && it->first.rfind(prefix, 0) == 0; ++it) {
    for (const auto& p : pods) {
      if (!it->second.matches(p->metadata.labels)) continue;
      out.push_back(it->first);
      break;
    }
    if (out.size() >= limit) break;
  }
  return out;
}

// --- controller ---

HorizontalController::HorizontalController(std::shared_ptr<client::RestClient> client,
                                           std::shared_ptr<client::EventRecorder> recorder,
                                           std::shared_ptr<client::DiscoveryClient> mapper,
                                           std::unique_ptr<MetricsClient> metrics,
                                           informers::SharedInformer<HorizontalPodAutoscaler>& hpas,
                                           informers::SharedInformer<api::core::v1::Pod>& pods,
                                           HorizontalControllerOptions opts, Clock& clock)
    : client_(std::move(client)), recorder_(std::move(recorder)), mapper_(std::move(mapper)),
      metrics_(std::move(metrics)), hpas_(hpas), pods_(pods), opts_(opts), clock_(clock),
      replicaCalc_(
          *metrics_,
          [this](const std::string& ns, const api::Selector& sel) {
            std::vector<PodPtr> out;
            for (auto& p : pods_.store().byIndex(informers::kNamespaceIndex, ns))
              if (sel.matches(p->metadata.labels)) out.push_back(p);
            return out;
          },
          opts.cpuInitializationPeriod, opts.delayOfInitialReadinessStatus, clock),
      base_("horizontalpodautoscaler", [this](const std::string& k) { return reconcileKey(k); }, clock, -1,
            std::make_unique<FixedItemIntervalRateLimiter>(
                std::chrono::duration_cast<Clock::Duration>(opts.resyncPeriod))) {
  numHPAs();  // a plain gauge: 0 from registration
  if (opts_.staleConsistency)
    consistency_.enable({{"horizontalpodautoscalers", [this] { return hpas_.lastSyncResourceVersion(); }}});
  informers::EventHandler<HorizontalPodAutoscaler> h;
  h.onAdd = [this](const auto& o) { enqueueHPA(*o); };
  h.onUpdate = [this](const auto& o, const auto& c) { updateHPA(*o, *c); };
  h.onDelete = [this](const auto& o, bool) { deleteHPA(*o); };
  registrations_.push_back(
      hpas_.addEventHandler(h, std::chrono::duration_cast<Clock::Duration>(opts.resyncPeriod)));
}

HorizontalController::~HorizontalController() { registrations_.clear(); }

void HorizontalController::run(int workers, std::stop_token stop) {
  KLOG_INFO("\"Starting HPA controller\"");
  base_.start(workers, stop, {[this] { return hpas_.hasSynced(); }, [this] { return pods_.hasSynced(); }});
}

client::ObjectReference HorizontalController::ref(const HorizontalPodAutoscaler& h) const {
  return {"HorizontalPodAutoscaler", "autoscaling/v2", h.metadata.namespace_, h.metadata.name, h.metadata.uid,
          h.metadata.resourceVersion, ""};
}

void HorizontalController::enqueueHPA(const HorizontalPodAutoscaler& hpa) {
  const std::string key = hpaKey(hpa);
  // Registered before the first sync, so a reconcile never finds its bookkeeping missing.
  if (selectorTracker_.putIfAbsent(key)) numHPAs().add(1);
  base_.enqueue(key);
}

void HorizontalController::updateHPA(const HorizontalPodAutoscaler& old, const HorizontalPodAutoscaler& cur) {
  // A spec change (a new generation) is acted on at once; our own status writes wait for the next period.
  if (opts_.generation && old.metadata.generation != cur.metadata.generation) {
    enqueueHPA(cur);
    return;
  }
  base_.queue().addRateLimited(hpaKey(cur));
}

void HorizontalController::deleteHPA(const HorizontalPodAutoscaler& hpa) {
  const std::string key = hpaKey(hpa);
  consistency_.clear(key, hpa.metadata.uid);
  base_.queue().forget(key);
  selectorTracker_.remove(key);
  numHPAs().add(-1);
}

runtime::SyncResult HorizontalController::reconcileKey(const std::string& key) {
  std::string lagging;
  if (Status s = consistency_.ensureReady(key, &lagging); !s.ok()) {
    reg().counter(std::string(kSubsystem) + "stale_sync_skips_total",
                  "[ALPHA] Total number of HPA syncs skipped due to a stale watch cache.",
                  {{"group", "autoscaling"}, {"resource", lagging}})
        .inc();
    return runtime::SyncResult::error(s);
  }
  auto [ns, name] = informers::splitMetaNamespaceKey(key);
  auto hpa = hpas_.store().get(ns, name);
  if (!hpa) {
    consistency_.clear(key);
    KLOG_INFO("\"Horizontal Pod Autoscaler has been deleted\" HPA=\"" + key + "\"");
    std::lock_guard l(mu_);
    recommendations_.erase(key);
    scaleUpEvents_.erase(key);
    scaleDownEvents_.erase(key);
    return runtime::SyncResult::ok();
  }
  Status s = reconcileAutoscaler(*hpa, key);
  if (!s.ok()) return runtime::SyncResult::error(s);  // the fixed limiter: again after the sync period
  return runtime::SyncResult::after(std::chrono::duration_cast<Clock::Duration>(opts_.resyncPeriod));
}

Tolerances HorizontalController::tolerancesForHpa(const HorizontalPodAutoscaler& hpa) const {
  Tolerances t{opts_.tolerance, opts_.tolerance};
  const auto& b = hpa.spec.behavior;
  if (!b || !opts_.configurableTolerance) return t;
  if (b->scaleDown && b->scaleDown->tolerance) t.scaleDown = approximateFloat(*b->scaleDown->tolerance);
  if (b->scaleUp && b->scaleUp->tolerance) t.scaleUp = approximateFloat(*b->scaleUp->tolerance);
  return t;
}

void HorizontalController::setCondition(HorizontalPodAutoscaler& hpa, const std::string& type,
                                        const std::string& status, const std::string& reason,
                                        const std::string& message) {
  auto& list = hpa.status.conditions;
  auto it = std::find_if(list.begin(), list.end(), [&](const auto& c) { return c.type == type; });
  if (it == list.end()) {
    list.push_back({});
    it = list.end() - 1;
    it->type = type;
  }
  if (it->status != status)
    it->lastTransitionTime.unixSeconds =
        std::chrono::duration_cast<std::chrono::seconds>(clock_.wallNow().time_since_epoch()).count();
  it->status = status;
  it->reason = reason;
  it->message = message;
}

HorizontalPodAutoscalerCondition HorizontalController::getUnableComputeReplicaCountCondition(
    const HorizontalPodAutoscaler& hpa, const std::string& reason, const Status& err) {
  recorder_->event(ref(hpa), client::kEventTypeWarning, reason, err.message());
  HorizontalPodAutoscalerCondition c;
  c.type = "ScalingActive";
  c.status = "False";
  c.reason = reason;
  c.message = "the HPA was unable to compute the replica count: " + err.message();
  return c;
}

Result<api::Selector> HorizontalController::validateAndParseSelector(HorizontalPodAutoscaler& hpa,
                                                                     const std::string& selector) {
  if (selector.empty()) {
    const std::string msg = "selector is required";
    recorder_->event(ref(hpa), client::kEventTypeWarning, "SelectorRequired", msg);
    setCondition(hpa, "ScalingActive", "False", "InvalidSelector", "the HPA target's scale is missing a selector");
    return Status(StatusCode::kInvalidArgument, msg);
  }
  auto parsed = api::parseSelector(selector);
  if (!parsed.ok()) {
    const std::string msg =
        "couldn't convert selector into a corresponding internal selector object: " + parsed.status().message();
    recorder_->event(ref(hpa), client::kEventTypeWarning, "InvalidSelector", msg);
    setCondition(hpa, "ScalingActive", "False", "InvalidSelector", msg);
    return Status(StatusCode::kInvalidArgument, msg);
  }
  const std::string key = hpaKey(hpa);
  if (!selectorTracker_.putIfPresent(key, *parsed))
    return Status(StatusCode::kNotFound, "HPA " + key + " was deleted during reconciliation");
  std::vector<PodPtr> pods;
  for (auto& p : pods_.store().byIndex(informers::kNamespaceIndex, hpa.metadata.namespace_))
    if (parsed->matches(p->metadata.labels)) pods.push_back(p);
  auto selecting = selectorTracker_.hpasMatchingPods(hpa.metadata.namespace_, pods, 2);
  if (selecting.size() > 1) {
    std::string names;
    for (const auto& k : selecting) names += (names.empty() ? "" : " ") + k;
    const std::string msg =
        "pods by selector " + selector + " are controlled by more than one HPA (e.g. [" + names + "])";
    recorder_->event(ref(hpa), client::kEventTypeWarning, "AmbiguousSelector", msg);
    setCondition(hpa, "ScalingActive", "False", "AmbiguousSelector", msg);
    return Status(StatusCode::kInvalidArgument, msg);
  }
  return parsed;
}

HorizontalController::MetricResult HorizontalController::computeStatusForResourceMetricGeneric(
    HorizontalPodAutoscaler& hpa, int32_t currentReplicas, const api::autoscaling::v2::MetricTarget& target,
    const std::string& resource, const std::string& container, const api::Selector& selector, bool containerSource,
    MetricValueStatus& out) {
  MetricResult r;
  const auto t = tolerancesForHpa(hpa);
  const std::string& ns = hpa.metadata.namespace_;
  if (target.averageValue) {
    auto p = replicaCalc_.GetRawResourceReplicas(currentReplicas, target.averageValue->milliValue(), resource, t, ns,
                                                 selector, container);
    if (!p.ok()) {
      r.error = Status(p.status().code(), "failed to get " + resource + " usage: " + p.status().message());
      return r;
    }
    r.replicas = p->replicas;
    r.timestamp = p->timestamp;
    r.metricName = resource + " resource";
    out.averageValue = milliQuantity(p->usage, resource == "memory");
    return r;
  }
  if (!target.averageUtilization) {
    r.error = Status(StatusCode::kInvalidArgument,
                     "invalid resource metric source: neither an average utilization target nor an average value "
                     "(usage) target was set");
    return r;
  }
  auto p = replicaCalc_.GetResourceReplicas(currentReplicas, *target.averageUtilization, resource, t, ns, selector,
                                            container);
  if (!p.ok()) {
    r.error = Status(p.status().code(), "failed to get " + resource + " utilization: " + p.status().message());
    return r;
  }
  r.replicas = p->replicas;
  r.timestamp = p->timestamp;
  r.metricName = resource + (containerSource ? " container" : "") + " resource utilization (percentage of request)";
  out.averageUtilization = p->utilization;
  out.averageValue = milliQuantity(p->usage, resource == "memory");
  return r;
}

HorizontalController::MetricResult HorizontalController::computeReplicasForMetric(
    HorizontalPodAutoscaler& hpa, const MetricSpec& spec, int32_t specReplicas, int32_t statusReplicas,
    const api::Selector& selector, MetricStatus& status) {
  const auto start = clock_.now();
  MetricResult r;
  const auto t = tolerancesForHpa(hpa);
  const std::string& ns = hpa.metadata.namespace_;
  auto fail = [&](const std::string& reason, Status err, const std::string& prefix) {
    r.condition = getUnableComputeReplicaCountCondition(hpa, reason, err);
    r.error = Status(err.code(), prefix + err.message());
  };
  if (spec.type == "Object" && spec.object) {
    const auto& o = *spec.object;
    auto metricSel = api::selectorFromLabelSelector(boxPtr(o.metric.selector));
    MetricStatus ms;
    ms.type = "Object";
    ms.object.emplace();
    ms.object->describedObject = o.describedObject;
    ms.object->metric = o.metric;
    if (!metricSel.ok()) {
      fail("FailedGetObjectMetric", metricSel.status(), "failed to get object metric value: ");
    } else if (o.target.type == "Value" && o.target.value) {
      auto p = replicaCalc_.GetObjectMetricReplicas(specReplicas, o.target.value->milliValue(), o.metric.name, t, ns,
                                                    o.describedObject, selector, *metricSel);
      if (!p.ok()) {
        fail("FailedGetObjectMetric", p.status(), "failed to get object metric value: ");
      } else {
        ms.object->current.value = milliQuantity(p->usage);
        status = ms;
        r.replicas = p->replicas;
        r.timestamp = p->timestamp;
        r.metricName = o.describedObject.kind + " metric " + o.metric.name;
      }
    } else if (o.target.type == "AverageValue" && o.target.averageValue) {
      auto p = replicaCalc_.GetObjectPerPodMetricReplicas(statusReplicas, o.target.averageValue->milliValue(),
                                                          o.metric.name, t, ns, o.describedObject, *metricSel);
      if (!p.ok()) {
        fail("FailedGetObjectMetric", p.status(),
             "failed to get object metric value: failed to get " + o.metric.name + " object metric: ");
      } else {
        ms.object->current.averageValue = milliQuantity(p->usage);
        status = ms;
        r.replicas = p->replicas;
        r.timestamp = p->timestamp;
        r.metricName = "external metric " + o.metric.name + "(" + selectorText(boxPtr(o.metric.selector)) + ")";
      }
    } else {
      fail("FailedGetObjectMetric",
           Status(StatusCode::kInvalidArgument,
                  "invalid object metric source: neither a value target nor an average value target was set"),
           "failed to get object metric value: ");
    }
  } else if (spec.type == "Pods" && spec.pods) {
    const auto& p = *spec.pods;
    auto metricSel = api::selectorFromLabelSelector(boxPtr(p.metric.selector));
    if (!metricSel.ok()) {
      fail("FailedGetPodsMetric", metricSel.status(), "failed to get pods metric value: ");
    } else {
      const int64_t target = p.target.averageValue ? p.target.averageValue->milliValue() : 0;
      auto got = replicaCalc_.GetMetricReplicas(specReplicas, target, p.metric.name, t, ns, selector, *metricSel);
      if (!got.ok()) {
        fail("FailedGetPodsMetric", got.status(), "failed to get pods metric value: ");
      } else {
        status = MetricStatus{};
        status.type = "Pods";
        status.pods.emplace();
        status.pods->metric = p.metric;
        status.pods->current.averageValue = milliQuantity(got->usage);
        r.replicas = got->replicas;
        r.timestamp = got->timestamp;
        r.metricName = "pods metric " + p.metric.name;
      }
    }
  } else if (spec.type == "Resource" && spec.resource) {
    MetricValueStatus v;
    r = computeStatusForResourceMetricGeneric(hpa, specReplicas, spec.resource->target, spec.resource->name, "",
                                              selector, false, v);
    if (!r.error.ok()) {
      Status err = r.error;
      fail("FailedGetResourceMetric", err, "failed to get " + spec.resource->name + " resource metric value: ");
    } else {
      status = MetricStatus{};
      status.type = "Resource";
      status.resource.emplace();
      status.resource->name = spec.resource->name;
      status.resource->current = v;
    }
  } else if (spec.type == "ContainerResource" && spec.containerResource) {
    const auto& c = *spec.containerResource;
    MetricValueStatus v;
    r = computeStatusForResourceMetricGeneric(hpa, specReplicas, c.target, c.name, c.container, selector, true, v);
    if (!r.error.ok()) {
      Status err = r.error;
      fail("FailedGetContainerResourceMetric", err, "failed to get " + c.container + " container metric value: ");
    } else {
      status = MetricStatus{};
      status.type = "ContainerResource";
      status.containerResource.emplace();
      status.containerResource->name = c.name;
      status.containerResource->container = c.container;
      status.containerResource->current = v;
    }
  } else if (spec.type == "External" && spec.external) {
    const auto& e = *spec.external;
    const std::string desc = "external metric " + e.metric.name + "(" + selectorText(boxPtr(e.metric.selector)) + ")";
    auto external = [&](MetricValueStatus current) {
      status = MetricStatus{};
      status.type = "External";
      status.external.emplace();
      status.external->metric = e.metric;
      status.external->current = std::move(current);
    };
    if (e.target.averageValue) {
      auto p = replicaCalc_.GetExternalPerPodMetricReplicas(statusReplicas, e.target.averageValue->milliValue(),
                                                            e.metric.name, t, ns, boxPtr(e.metric.selector));
      if (!p.ok()) {
        fail("FailedGetExternalMetric", p.status(),
             "failed to get " + e.metric.name + " external metric value: failed to get " + e.metric.name +
                 " external metric: ");
      } else {
        MetricValueStatus v;
        v.averageValue = milliQuantity(p->usage);
        external(v);
        r.replicas = p->replicas;
        r.timestamp = p->timestamp;
        r.metricName = desc;
      }
    } else if (e.target.value) {
      auto p = replicaCalc_.GetExternalMetricReplicas(specReplicas, e.target.value->milliValue(), e.metric.name, t, ns,
                                                      boxPtr(e.metric.selector), selector);
      if (!p.ok()) {
        fail("FailedGetExternalMetric", p.status(),
             "failed to get " + e.metric.name + " external metric value: failed to get external metric " +
                 e.metric.name + ": ");
      } else {
        MetricValueStatus v;
        v.value = milliQuantity(p->usage);
        external(v);
        r.replicas = p->replicas;
        r.timestamp = p->timestamp;
        r.metricName = desc;
      }
    } else {
      fail("FailedGetExternalMetric",
           Status(StatusCode::kInvalidArgument,
                  "invalid external metric source: neither a value target nor an average value target was set"),
           "failed to get " + e.metric.name + " external metric value: ");
    }
  } else {
    // The apiserver's validation keeps other types out.
    Status err(StatusCode::kInvalidArgument, "unknown metric source type \"" + spec.type + "\"");
    r.condition = getUnableComputeReplicaCountCondition(hpa, "InvalidMetricSourceType", err);
    r.error = err;
    r.specError = true;
  }
  std::string action = "none";
  if (r.error.ok()) {
    if (r.replicas > hpa.status.currentReplicas) action = "scale_up";
    else if (r.replicas < hpa.status.currentReplicas) action = "scale_down";
  }
  observeMetricComputation(action, r.error.ok() ? "none" : (r.specError ? "spec" : "internal"),
                           seconds(clock_.now() - start), spec.type);
  return r;
}

Status HorizontalController::computeReplicasForMetrics(HorizontalPodAutoscaler& hpa,
                                                       const api::autoscaling::v1::Scale& scale, int32_t& replicas,
                                                       std::string& metric, std::vector<MetricStatus>& statuses,
                                                       bool& fatal) {
  fatal = false;
  replicas = 0;
  auto selector = validateAndParseSelector(hpa, scale.status.selector);
  if (!selector.ok()) {
    fatal = true;
    return selector.status();
  }
  const int32_t specReplicas = scale.spec.replicas, statusReplicas = scale.status.replicas;
  const auto& specs = hpa.spec.metrics;
  statuses.assign(specs.size(), MetricStatus{});
  size_t invalid = 0;
  Status firstErr;
  HorizontalPodAutoscalerCondition invalidCondition;
  for (size_t i = 0; i < specs.size(); ++i) {
    auto r = computeReplicasForMetric(hpa, specs[i], specReplicas, statusReplicas, *selector, statuses[i]);
    if (!r.error.ok()) {
      if (invalid == 0) {
        invalidCondition = r.condition;
        firstErr = r.error;
      }
      ++invalid;
      continue;
    }
    if (replicas == 0 || r.replicas > replicas) {
      replicas = r.replicas;
      metric = r.metricName;
    }
  }
  Status err;
  if (!firstErr.ok())
    err = Status(firstErr.code(), "invalid metrics (" + std::to_string(invalid) + " invalid out of " +
                                      std::to_string(specs.size()) + "), first error is: " + firstErr.message());
  if (invalid >= specs.size() || (invalid > 0 && replicas < specReplicas)) {
    setCondition(hpa, invalidCondition.type, invalidCondition.status, invalidCondition.reason, invalidCondition.message);
    fatal = true;
    return err;
  }
  setCondition(hpa, "ScalingActive", "True", "ValidMetricFound",
               "the HPA was able to successfully calculate a replica count from " + metric);
  return err;
}

void HorizontalController::recordInitialRecommendation(int32_t currentReplicas, const std::string& key) {
  std::lock_guard l(mu_);
  auto& recs = recommendations_[key];
  if (recs.empty()) recs.push_back({currentReplicas, clock_.wallNow()});
}

int32_t HorizontalController::stabilizeRecommendation(const std::string& key, int32_t prenormalized) {
  int32_t maxRecommendation = prenormalized;
  const WallTime now = clock_.wallNow();
  const WallTime cutoff = now - std::chrono::duration_cast<WallTime::duration>(opts_.downscaleStabilisationWindow);
  std::lock_guard l(mu_);
  auto& recs = recommendations_[key];
  std::optional<size_t> oldSample;
  for (size_t i = 0; i < recs.size(); ++i) {
    if (recs[i].timestamp < cutoff) oldSample = i;
    else if (recs[i].recommendation > maxRecommendation) maxRecommendation = recs[i].recommendation;
  }
  if (oldSample) recs[*oldSample] = {prenormalized, now};
  else recs.push_back({prenormalized, now});
  return maxRecommendation;
}

HorizontalController::Limited HorizontalController::convertDesiredReplicasWithRules(int32_t current, int32_t desired,
                                                                                   int32_t minReplicas,
                                                                                   int32_t maxReplicas) {
  // A cap on growth per sync against bogus usage reports (issue #32304).
  const auto scaleUpLimit =
      static_cast<int32_t>(std::max(kScaleUpLimitFactor * static_cast<double>(current), kScaleUpLimitMinimum));
  int32_t maximumAllowed;
  std::string reason, message;
  if (maxReplicas > scaleUpLimit) {
    maximumAllowed = scaleUpLimit;
    reason = "ScaleUpLimit";
    message = "the desired replica count is increasing faster than the maximum scale rate";
  } else {
    maximumAllowed = maxReplicas;
    reason = "TooManyReplicas";
    message = "the desired replica count is more than the maximum replica count";
  }
  if (desired < minReplicas)
    return {minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"};
  if (desired > maximumAllowed) return {maximumAllowed, reason, message};
  return {desired, "DesiredWithinRange", "the desired count is within the acceptable range"};
}

int32_t HorizontalController::normalizeDesiredReplicas(HorizontalPodAutoscaler& hpa, const std::string& key,
                                                       int32_t current, int32_t prenormalized, int32_t minReplicas) {
  const int32_t stabilized = stabilizeRecommendation(key, prenormalized);
  if (stabilized != prenormalized)
    setCondition(hpa, "AbleToScale", "True", "ScaleDownStabilized",
                 "recent recommendations were higher than current one, applying the highest recent recommendation");
  else
    setCondition(hpa, "AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size");
  auto limited = convertDesiredReplicasWithRules(current, stabilized, minReplicas, hpa.spec.maxReplicas);
  setCondition(hpa, "ScalingLimited", limited.replicas == stabilized ? "False" : "True", limited.reason,
               limited.message);
  return limited.replicas;
}

namespace {

int32_t getReplicasChangePerPeriod(int32_t periodSeconds, const std::vector<WallTime>& times,
                                   const std::vector<int32_t>& changes, WallTime now) {
  const WallTime cutoff = now - std::chrono::seconds(periodSeconds);
  int32_t replicas = 0;
  for (size_t i = 0; i < times.size(); ++i)
    if (times[i] > cutoff) replicas += changes[i];
  return replicas;
}

int32_t getLongestPolicyPeriod(const HPAScalingRules* rules) {
  int32_t longest = 0;
  if (rules)
    for (const auto& p : rules->policies) longest = std::max(longest, p.periodSeconds);
  return longest;
}

}  // namespace

void HorizontalController::storeScaleEvent(const api::autoscaling::v2::HorizontalPodAutoscalerBehavior* behavior,
                                           const std::string& key, int32_t prevReplicas, int32_t newReplicas) {
  if (!behavior) return;  // only behaviors read them
  const bool up = newReplicas > prevReplicas;
  const HPAScalingRules* rules = up ? boxPtr(behavior->scaleUp) : boxPtr(behavior->scaleDown);
  const WallTime now = clock_.wallNow();
  const WallTime cutoff = now - std::chrono::seconds(getLongestPolicyPeriod(rules));
  std::lock_guard l(mu_);
  auto& events = up ? scaleUpEvents_[key] : scaleDownEvents_[key];
  std::optional<size_t> oldSample;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].timestamp < cutoff) events[i].outdated = true;  // markScaleEventsOutdated
    if (events[i].outdated) oldSample = i;
  }
  TimestampedScaleEvent e{up ? newReplicas - prevReplicas : prevReplicas - newReplicas, now, false};
  if (oldSample) events[*oldSample] = e;
  else events.push_back(e);
}

HorizontalController::Limited HorizontalController::stabilizeRecommendationWithBehaviors(const NormalizationArg& a) {
  const WallTime now = clock_.wallNow();
  int32_t upRecommendation = a.desiredReplicas, downRecommendation = a.desiredReplicas;
  const WallTime upCutoff = now - std::chrono::seconds(a.scaleUp->stabilizationWindowSeconds.value_or(0));
  const WallTime downCutoff = now - std::chrono::seconds(a.scaleDown->stabilizationWindowSeconds.value_or(0));
  std::lock_guard l(mu_);
  auto& recs = recommendations_[a.key];
  std::optional<size_t> oldSample;
  for (size_t i = 0; i < recs.size(); ++i) {
    if (recs[i].timestamp > upCutoff) upRecommendation = std::min(recs[i].recommendation, upRecommendation);
    if (recs[i].timestamp > downCutoff) downRecommendation = std::max(recs[i].recommendation, downRecommendation);
    if (recs[i].timestamp < upCutoff && recs[i].timestamp < downCutoff) oldSample = i;
  }
  int32_t recommendation = a.currentReplicas;
  if (recommendation < upRecommendation) recommendation = upRecommendation;
  if (recommendation > downRecommendation) recommendation = downRecommendation;
  if (oldSample) recs[*oldSample] = {a.desiredReplicas, now};
  else recs.push_back({a.desiredReplicas, now});
  if (a.desiredReplicas >= a.currentReplicas)
    return {recommendation, "ScaleUpStabilized",
            "recent recommendations were lower than current one, applying the lowest recent recommendation"};
  return {recommendation, "ScaleDownStabilized",
          "recent recommendations were higher than current one, applying the highest recent recommendation"};
}

namespace {

// upstream calculateScaleUpLimitWithScalingRules / calculateScaleDownLimitWithBehaviors: the replica count the
// rules let a scale in one direction reach. startFor(period) is the count the period began with. Max selects the
// policy allowing the biggest change (the highest limit up, the lowest down), Min the smallest.
int32_t limitWithScalingRules(const HPAScalingRules& rules, int32_t current, bool up,
                              const std::function<int32_t(int32_t)>& startFor) {
  const std::string select = rules.selectPolicy.value_or("Max");
  if (select == "Disabled") return current;
  const bool highest = (select == "Max") == up;
  int32_t limit = highest ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max();
  for (const auto& p : rules.policies) {
    const int32_t start = startFor(p.periodSeconds);
    const double fraction = static_cast<double>(p.value) / 100;
    int32_t proposed = 0;
    if (p.type == "Pods") proposed = up ? start + p.value : start - p.value;
    else if (p.type == "Percent")
      proposed = up ? static_cast<int32_t>(std::ceil(static_cast<double>(start) * (1 + fraction)))
                    : static_cast<int32_t>(static_cast<double>(start) * (1 - fraction));
    limit = highest ? std::max(limit, proposed) : std::min(limit, proposed);
  }
  return limit;
}

}  // namespace

HorizontalController::Limited HorizontalController::convertDesiredReplicasWithBehaviorRate(const NormalizationArg& a) {
  const WallTime now = clock_.wallNow();
  auto changes = [&](int32_t period, const std::vector<TimestampedScaleEvent>& events) {
    std::vector<WallTime> t;
    std::vector<int32_t> c;
    for (const auto& e : events) {
      t.push_back(e.timestamp);
      c.push_back(e.replicaChange);
    }
    return getReplicasChangePerPeriod(period, t, c, now);
  };
  std::lock_guard l(mu_);
  const auto& ups = scaleUpEvents_[a.key];
  const auto& downs = scaleDownEvents_[a.key];
  auto startFor = [&](int32_t period) { return a.currentReplicas - changes(period, ups) + changes(period, downs); };
  if (a.desiredReplicas > a.currentReplicas) {
    // No further up until old events age out.
    const int32_t limit = std::max(limitWithScalingRules(*a.scaleUp, a.currentReplicas, true, startFor), a.currentReplicas);
    if (a.maxReplicas > limit) {
      if (a.desiredReplicas > limit)
        return {limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"};
    } else if (a.desiredReplicas > a.maxReplicas) {
      return {a.maxReplicas, "TooManyReplicas", "the desired replica count is more than the maximum replica count"};
    }
  } else if (a.desiredReplicas < a.currentReplicas) {
    const int32_t limit =
        std::min(limitWithScalingRules(*a.scaleDown, a.currentReplicas, false, startFor), a.currentReplicas);
    if (a.minReplicas < limit) {
      if (a.desiredReplicas < limit)
        return {limit, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"};
    } else if (a.desiredReplicas < a.minReplicas) {
      return {a.minReplicas, "TooFewReplicas", "the desired replica count is less than the minimum replica count"};
    }
  }
  return {a.desiredReplicas, "DesiredWithinRange", "the desired count is within the acceptable range"};
}

int32_t HorizontalController::normalizeDesiredReplicasWithBehaviors(HorizontalPodAutoscaler& hpa,
                                                                    const std::string& key, int32_t current,
                                                                    int32_t prenormalized, int32_t minReplicas) {
  auto& b = *hpa.spec.behavior;
  // maybeInitScaleDownStabilizationWindow: the flag's window where the object names none.
  if (b.scaleDown && !b.scaleDown->stabilizationWindowSeconds)
    b.scaleDown->stabilizationWindowSeconds = static_cast<int32_t>(
        std::chrono::duration_cast<std::chrono::seconds>(opts_.downscaleStabilisationWindow).count());
  // The apiserver defaults both rules; an object from elsewhere may lack them.
  static const HPAScalingRules kNoRules{};
  NormalizationArg a{key, b.scaleUp ? boxPtr(b.scaleUp) : &kNoRules, b.scaleDown ? boxPtr(b.scaleDown) : &kNoRules,
                     minReplicas, hpa.spec.maxReplicas, current, prenormalized};
  auto stabilized = stabilizeRecommendationWithBehaviors(a);
  a.desiredReplicas = stabilized.replicas;
  if (stabilized.replicas != prenormalized)
    setCondition(hpa, "AbleToScale", "True", stabilized.reason, stabilized.message);
  else
    setCondition(hpa, "AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size");
  auto limited = convertDesiredReplicasWithBehaviorRate(a);
  setCondition(hpa, "ScalingLimited", limited.replicas == stabilized.replicas ? "False" : "True", limited.reason,
               limited.message);
  return limited.replicas;
}

Result<std::pair<api::autoscaling::v1::Scale, client::APIResourceInfo>> HorizontalController::scaleForResourceMapping(
    const std::string& ns, const std::string& name, const std::string& group, const std::string& version,
    const std::string& kind) {
  auto mapping = mapper_->resourceFor(group, "", kind);
  if (!mapping.ok()) mapping = mapper_->resourceFor(group, version, kind);
  if (!mapping.ok()) {
    if (mapping.status().code() == StatusCode::kNotFound)
      return Status(StatusCode::kNotFound, "no matches for kind \"" + kind + "\" in group \"" + group + "\"");
    return mapping.status();
  }
  client::Request req;
  req.path = client::resourcePath(mapping->group, mapping->version, mapping->resource, ns, name, "scale");
  auto scale = client::decodeResponse<api::autoscaling::v1::Scale>(client_->send(req));
  if (!scale.ok()) return scale.status();
  return std::make_pair(std::move(*scale), *mapping);
}

Status HorizontalController::updateScale(const client::APIResourceInfo& mapping, api::autoscaling::v1::Scale& scale,
                                         int32_t replicas, const std::string& name) {
  const std::string path =
      client::resourcePath(mapping.group, mapping.version, mapping.resource, scale.metadata.namespace_, name, "scale");
  Status last;
  for (int attempt = 0; attempt < 5; ++attempt) {  // retry.DefaultRetry
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    scale.spec.replicas = replicas;
    auto r = client::sendObject(*client_, "PUT", path, scale, {});
    if (r.ok()) return Status::Ok();
    last = r.status();
    client::Request get;
    get.path = path;
    auto latest = client::decodeResponse<api::autoscaling::v1::Scale>(client_->send(get));
    if (latest.ok()) scale = std::move(*latest);
    else KLOG_ERROR("\"error getting latest scale during conflict retry\" err=\"" + latest.status().message() + "\"");
    if (last.code() != StatusCode::kConflict) break;
  }
  return last;
}

void HorizontalController::setStatus(HorizontalPodAutoscaler& hpa, int32_t currentReplicas, int32_t desiredReplicas,
                                     std::vector<MetricStatus> metricStatuses, bool rescale) {
  HorizontalPodAutoscalerStatus s;
  s.currentReplicas = currentReplicas;
  s.desiredReplicas = desiredReplicas;
  s.lastScaleTime = hpa.status.lastScaleTime;
  s.currentMetrics = std::move(metricStatuses);
  s.conditions = std::move(hpa.status.conditions);
  if (opts_.generation) s.observedGeneration = hpa.metadata.generation;
  if (rescale)
    s.lastScaleTime = api::Time{std::chrono::duration_cast<std::chrono::seconds>(clock_.wallNow().time_since_epoch()).count()};
  hpa.status = std::move(s);
}

Status HorizontalController::updateStatusIfNeeded(const HorizontalPodAutoscalerStatus& old,
                                                  HorizontalPodAutoscaler& hpa) {
  HorizontalPodAutoscaler before = hpa;
  before.status = old;
  if (api::autoscaling::v2::toJson(before) == api::autoscaling::v2::toJson(hpa)) return Status::Ok();
  auto updated = client::updateStatus(*client_, hpa);
  if (!updated.ok()) {
    recorder_->event(ref(hpa), client::kEventTypeWarning, "FailedUpdateStatus", updated.status().message());
    return Status(updated.status().code(),
                  "failed to update status for " + hpa.metadata.name + ": " + updated.status().message());
  }
  consistency_.wroteAt(hpaKey(*updated), updated->metadata.uid, "horizontalpodautoscalers",
                       updated->metadata.resourceVersion);
  KLOG_V(2, "\"Successfully updated status\" HPA=\"" + hpaKey(hpa) + "\"");
  return Status::Ok();
}

Status HorizontalController::reconcileAutoscaler(const HorizontalPodAutoscaler& shared, const std::string& key) {
  const auto start = clock_.now();
  std::string action = "none";
  bool specError = false;
  Status result = [&]() -> Status {
    HorizontalPodAutoscaler hpa = shared;  // never mutate the cache
    const HorizontalPodAutoscalerStatus original = hpa.status;
    const auto& target = hpa.spec.scaleTargetRef;
    const std::string& ns = hpa.metadata.namespace_;
    const std::string reference = target.kind + "/" + ns + "/" + target.name;
    auto failedGetScale = [&](const Status& err) {
      recorder_->event(ref(hpa), client::kEventTypeWarning, "FailedGetScale", err.message());
      setCondition(hpa, "AbleToScale", "False", "FailedGetScale",
                   "the HPA controller was unable to get the target's current scale: " + err.message());
      if (Status s = updateStatusIfNeeded(original, hpa); !s.ok()) KLOG_ERROR("\"" + s.message() + "\"");
    };
    // schema.ParseGroupVersion
    std::string group, version = target.apiVersion;
    if (auto slash = target.apiVersion.find('/'); slash != std::string::npos) {
      group = target.apiVersion.substr(0, slash);
      version = target.apiVersion.substr(slash + 1);
      if (version.find('/') != std::string::npos) {
        Status err(StatusCode::kInvalidArgument, "unexpected GroupVersion string: " + target.apiVersion);
        failedGetScale(err);
        specError = true;
        return Status(err.code(), "invalid API version in scale target reference: " + err.message());
      }
    }
    auto got = scaleForResourceMapping(ns, target.name, group, version, target.kind);
    if (!got.ok()) {
      failedGetScale(got.status());
      return Status(got.status().code(), "failed to query scale subresource for " + reference + ": " +
                                             got.status().message());
    }
    auto& [scale, mapping] = *got;
    setCondition(hpa, "AbleToScale", "True", "SucceededGetScale",
                 "the HPA controller was able to get the target's current scale");
    const int32_t currentReplicas = scale.spec.replicas;
    recordInitialRecommendation(currentReplicas, key);

    std::vector<MetricStatus> metricStatuses;
    int32_t desiredReplicas = 0;
    std::string rescaleReason;
    const int32_t minReplicas = hpa.spec.minReplicas.value_or(1);
    bool rescale = true;
    const bool hasObjectOrExt = std::any_of(hpa.spec.metrics.begin(), hpa.spec.metrics.end(), [](const MetricSpec& m) {
      return m.type == "Object" || m.type == "External";
    });
    bool scaledToZeroCondition = false;
    if (opts_.scaleToZero)
      for (const auto& c : hpa.status.conditions)
        if (c.type == "ScaledToZero") {
          scaledToZeroCondition = c.status == "True";
          break;
        }
    const bool canScaleFromZero = scaledToZeroCondition && hasObjectOrExt;
    bool needsMetrics = true;
    if (currentReplicas == 0) {
      // shouldComputeMetricsForZeroReplicas: a target scaled to zero by hand stays there.
      needsMetrics = (minReplicas != 0 && scaledToZeroCondition) || canScaleFromZero;
      if (!needsMetrics) {
        desiredReplicas = 0;
        rescale = false;
        setCondition(hpa, "ScalingActive", "False", "ScalingDisabled",
                     "scaling is disabled since the replica count of the target is zero");
        if (!opts_.scaleToZero) std::erase_if(hpa.status.conditions, [](auto& c) { return c.type == "ScaledToZero"; });
      }
    } else if (currentReplicas > hpa.spec.maxReplicas) {
      rescaleReason = "Current number of replicas above Spec.MaxReplicas";
      desiredReplicas = hpa.spec.maxReplicas;
      needsMetrics = false;
    } else if (currentReplicas < minReplicas) {
      rescaleReason = "Current number of replicas below Spec.MinReplicas";
      desiredReplicas = minReplicas;
      needsMetrics = false;
    }
    Status retErr;
    if (needsMetrics) {
      int32_t metricDesired = 0;
      std::string metricName;
      bool fatal = false;
      Status err = computeReplicasForMetrics(hpa, scale, metricDesired, metricName, metricStatuses, fatal);
      if (fatal) {
        setStatus(hpa, currentReplicas, hpa.status.desiredReplicas, metricStatuses, false);
        if (Status s = updateStatusIfNeeded(original, hpa); !s.ok()) KLOG_ERROR("\"" + s.message() + "\"");
        recorder_->event(ref(hpa), client::kEventTypeWarning, "FailedComputeMetricsReplicas", err.message());
        return Status(err.code(), "failed to compute desired number of replicas based on listed metrics for " +
                                      reference + ": " + err.message());
      }
      retErr = err;  // some metrics failed but others allow scaling: report it after acting
      KLOG_V(4, std::string("\"") + (currentReplicas == 0 ? "Proposing desired replicas from zero" : "Proposing desired replicas") +
                    "\" desiredReplicas=" + std::to_string(metricDesired) + " metric=\"" + metricName +
                    "\" tolerances=\"" + tolerancesForHpa(hpa).str() + "\" scaleTarget=\"" + reference + "\"");
      std::string rescaleMetric;
      if (metricDesired > desiredReplicas) {
        desiredReplicas = metricDesired;
        rescaleMetric = metricName;
      }
      if (desiredReplicas > currentReplicas) rescaleReason = rescaleMetric + " above target";
      if (desiredReplicas < currentReplicas) rescaleReason = "All metrics below target";
      desiredReplicas = hpa.spec.behavior
                            ? normalizeDesiredReplicasWithBehaviors(hpa, key, currentReplicas, desiredReplicas, minReplicas)
                            : normalizeDesiredReplicas(hpa, key, currentReplicas, desiredReplicas, minReplicas);
      if (currentReplicas == 0 && minReplicas != 0 && scaledToZeroCondition && desiredReplicas < minReplicas) {
        desiredReplicas = minReplicas;
        if (rescaleReason.empty()) rescaleReason = "Current number of replicas below Spec.MinReplicas";
      }
      rescale = desiredReplicas != currentReplicas;
    }
    if (rescale) {
      Status err = updateScale(mapping, scale, desiredReplicas, target.name);
      if (!err.ok()) {
        recorder_->event(ref(hpa), client::kEventTypeWarning, "FailedRescale",
                         "New size: " + std::to_string(desiredReplicas) + "; reason: " + rescaleReason +
                             "; error: " + err.message());
        setCondition(hpa, "AbleToScale", "False", "FailedUpdateScale",
                     "the HPA controller was unable to update the target scale: " + err.message());
        setStatus(hpa, currentReplicas, hpa.status.desiredReplicas, metricStatuses, false);
        if (Status s = updateStatusIfNeeded(original, hpa); !s.ok()) KLOG_ERROR("\"" + s.message() + "\"");
        return Status(err.code(), "failed to rescale " + reference + ": " + err.message());
      }
      setCondition(hpa, "AbleToScale", "True", "SucceededRescale",
                   "the HPA controller was able to update the target scale to " + std::to_string(desiredReplicas));
      recorder_->event(ref(hpa), client::kEventTypeNormal, "SuccessfulRescale",
                       "New size: " + std::to_string(desiredReplicas) + "; reason: " + rescaleReason);
      storeScaleEvent(boxPtr(hpa.spec.behavior), key, currentReplicas, desiredReplicas);
      KLOG_INFO("\"Successfully rescaled\" HPA=\"" + key + "\" currentReplicas=" + std::to_string(currentReplicas) +
                " desiredReplicas=" + std::to_string(desiredReplicas) + " reason=\"" + rescaleReason + "\"");
      if (opts_.scaleToZero) {
        if (currentReplicas > 0 && desiredReplicas == 0 && minReplicas == 0 && hasObjectOrExt)
          setCondition(hpa, "ScaledToZero", "True", "ScaledToZero", "the HPA controller scaled the workload to zero");
        else
          setCondition(hpa, "ScaledToZero", "False", "NotScaledToZero",
                       "the HPA controller did not scale the workload to zero");
      } else {
        std::erase_if(hpa.status.conditions, [](auto& c) { return c.type == "ScaledToZero"; });
      }
      action = desiredReplicas > currentReplicas ? "scale_up" : "scale_down";
    } else {
      KLOG_V(4, "\"Decided not to scale\" scaleTarget=\"" + reference + "\" desiredReplicas=" +
                    std::to_string(desiredReplicas) + " lastScaleTime=\"" +
                    (hpa.status.lastScaleTime ? hpa.status.lastScaleTime->rfc3339() : "") + "\"");
      desiredReplicas = currentReplicas;
    }
    setStatus(hpa, currentReplicas, desiredReplicas, std::move(metricStatuses), rescale);
    reg().gauge(std::string(kSubsystem) + "desired_replicas", "[ALPHA] Current desired replica count for HPA objects.",
                {{"namespace", ns}, {"hpa_name", hpa.metadata.name}})
        .set(desiredReplicas);
    if (Status s = updateStatusIfNeeded(original, hpa); !s.ok()) return s;
    return retErr;
  }();
  observeReconciliation(action, result.ok() ? "none" : (specError ? "spec" : "internal"), seconds(clock_.now() - start));
  return result;
}

}  // namespace kcm::controllers::podautoscaler
