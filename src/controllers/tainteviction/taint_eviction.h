#pragma once
// taint-eviction-controller (upstream pkg/controller/tainteviction): pods bound to a node with NoExecute taints
// they do not all tolerate are deleted at once; pods tolerating them all are deleted after the smallest
// tolerationSeconds of the tolerations used (never when none sets it). The scheduled deletion is cancelled
// (event "Cancelling deletion of Pod") when the taints go away or become tolerated. Before deleting, the pod
// gets the condition DisruptionTarget=True (reason DeletionByTaintManager). A scheduled deletion is forgotten once
// it returned, so a pod still terminating is evicted again, with a new event, on a later taint or toleration
// change (upstream timed_workers.go). Node and pod updates are handled by
// 8 shards by node name (one pool task each at a time), node updates first, as upstream's 8 workers.
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <stop_token>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <atomic>
#include <vector>

#include "api/gen/core_v1.h"
#include "base/clock.h"
#include "base/executor.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "controllers/tainteviction/timed_workers.h"
#include "informers/shared_informer.h"

namespace kcm::controllers {

class TaintEvictionController {
 public:
  using Pod = api::core::v1::Pod;
  using Node = api::core::v1::Node;

  TaintEvictionController(std::shared_ptr<client::RestClient> client, std::shared_ptr<client::EventRecorder> recorder,
                          informers::SharedInformer<Pod>& pods, informers::SharedInformer<Node>& nodes,
                          std::string name, bool comparisonOperators = false);
  ~TaintEvictionController();
  void run(std::stop_token stop);

 private:
  struct Item {
    bool isNode;
    std::string nodeName, podNamespace, podName;
    std::string key() const { return (isNode ? "n/" : "p/") + nodeName + "/" + podNamespace + "/" + podName; }
  };
  struct Shard {  // processed by at most one pool task at a time (per-node ordering)
    std::mutex mu;
    std::deque<Item> nodes, pods;
    std::set<std::string> pending;
    bool active = false;
  };
  void enqueue(Item it);
  void dispatch(Shard& s);
  void drainShard(Shard& s);
  void handleNodeUpdate(const std::string& nodeName);
  void handlePodUpdate(const Item& it);
  void processPodOnNode(const std::string& podKey, const std::string& nodeName,
                        const std::vector<api::core::v1::Toleration>& tolerations,
                        const std::vector<api::core::v1::Taint>& taints, Clock::TimePoint now);
  void cancelWorkWithEvent(const std::string& podKey);
  Status deletePod(const std::string& podKey, Clock::TimePoint fireAt);
  Status addConditionAndDeletePod(const std::string& ns, const std::string& name);
  void podEvent(const std::string& podKey, const std::string& message);

  std::shared_ptr<client::RestClient> client_;
  std::shared_ptr<client::EventRecorder> recorder_;
  informers::SharedInformer<Pod>& pods_;
  informers::SharedInformer<Node>& nodes_;
  std::string name_;
  bool comparisonOperators_;
  std::mutex taintedMu_;
  std::map<std::string, std::vector<api::core::v1::Taint>> taintedNodes_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::unique_ptr<TimedWorkerQueue> evictionQueue_;
  std::atomic<bool> ready_{false}, stopped_{false};
  std::mutex activeMu_;
  std::condition_variable activeCv_;
  int active_ = 0;
  std::unique_ptr<std::stop_callback<std::function<void()>>> stopCb_;
  Periodic startWhenSynced_;  // last: stopped first
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers
