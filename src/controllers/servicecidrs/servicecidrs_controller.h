#pragma once
// service-cidr-controller (upstream pkg/controller/servicecidrs, gate MultiCIDRServiceAllocator, GA at the pin):
// puts the networking.k8s.io/service-cidr-finalizer on every ServiceCIDR and its Ready=True condition ("Kubernetes
// Service CIDR is ready", server-side apply of the status by service-cidr-controller); a ServiceCIDR being deleted
// keeps its finalizer while IPAddresses (allocated by ipallocator.k8s.io) exist that no other ServiceCIDR contains
// (Ready=False, reason Terminating), and loses it 10 s after its deletion started once none is left.
#include <memory>
#include <string>
#include <vector>

#include "api/gen/networking_v1.h"
#include "client/events.h"
#include "client/rest_client.h"
#include "informers/shared_informer.h"
#include "runtime/controller.h"

namespace kcm::controllers::servicecidrs {

inline constexpr const char* kControllerName = "service-cidr-controller";
inline constexpr const char* kServiceCIDRProtectionFinalizer = "networking.k8s.io/service-cidr-finalizer";
inline constexpr const char* kIPAllocatorControllerName = "ipallocator.k8s.io";

using api::networking::v1::IPAddress;
using api::networking::v1::ServiceCIDR;

class ServiceCIDRsController {
 public:
  ServiceCIDRsController(std::shared_ptr<client::RestClient> client, informers::SharedInformer<ServiceCIDR>& cidrs,
                         informers::SharedInformer<IPAddress>& ips, std::shared_ptr<client::EventRecorder> recorder,
                         Clock& clock = RealClock::get());
  void run(int workers, std::stop_token stop);
  runtime::SyncResult sync(const std::string& key);
  bool canDeleteCIDR(const ServiceCIDR& cidr) const;

 private:
  std::vector<std::string> overlappingServiceCIDRs(const ServiceCIDR& cidr) const;
  std::vector<std::string> containingServiceCIDRs(const IPAddress& ip) const;
  Status updateConditionIfNeeded(const ServiceCIDR& cidr, const std::string& status, const std::string& reason,
                                 const std::string& message);
  std::shared_ptr<client::RestClient> client_;
  informers::SharedInformer<ServiceCIDR>& cidrs_;
  informers::SharedInformer<IPAddress>& ips_;
  std::shared_ptr<client::EventRecorder> recorder_;
  Clock& clock_;
  runtime::ControllerBase base_;
  std::vector<informers::Registration> registrations_;  // last: the handlers go first
};

}  // namespace kcm::controllers::servicecidrs
