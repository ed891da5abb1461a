#include "controllers/endpoint/endpoints_util.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

#include "controllers/util/pod_template_dump.h"

namespace kcm::controllers::endpoint {

using api::core::v1::EndpointAddress;
using api::core::v1::EndpointPort;
using api::core::v1::EndpointSubset;

namespace {

std::string targetUID(const EndpointAddress& a) { return a.targetRef ? a.targetRef->uid : ""; }

// A map key for an EndpointPort value (upstream keys a Go map by the struct).
using PortKey = std::tuple<std::string, int32_t, std::string, std::optional<std::string>>;
PortKey portKey(const EndpointPort& p) { return {p.name, p.port, p.protocol, p.appProtocol}; }

unsigned __int128 hashSubset(const EndpointSubset& s) {
  podtemplatehash::Dumper d(nullptr, podtemplatehash::Dumper::Hash::kFnv128a);
  podtemplatehash::dumpEndpointSubset(d, s);
  return d.sum128();
}

unsigned __int128 hashPort(const EndpointPort& p) {
  podtemplatehash::Dumper d(nullptr, podtemplatehash::Dumper::Hash::kFnv128a);
  podtemplatehash::dumpEndpointPort(d, p);
  return d.sum128();
}

bool sameRef(const api::Box<api::core::v1::ObjectReference>& a, const api::Box<api::core::v1::ObjectReference>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a.has_value()) return true;
  return a->kind == b->kind && a->namespace_ == b->namespace_ && a->name == b->name && a->uid == b->uid &&
         a->apiVersion == b->apiVersion && a->fieldPath == b->fieldPath;
}

bool sameAddresses(const std::vector<EndpointAddress>& a, const std::vector<EndpointAddress>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].ip != b[i].ip || a[i].hostname != b[i].hostname || a[i].nodeName != b[i].nodeName ||
        !sameRef(a[i].targetRef, b[i].targetRef))
      return false;
  return true;
}

bool samePorts(const std::vector<EndpointPort>& a, const std::vector<EndpointPort>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (portKey(a[i]) != portKey(b[i])) return false;
  return true;
}

}  // namespace

bool lessEndpointAddress(const EndpointAddress& a, const EndpointAddress& b) {
  if (a.ip != b.ip) return a.ip < b.ip;  // bytes.Compare of the text
  if (!b.targetRef) return false;
  if (!a.targetRef) return true;
  return a.targetRef->uid < b.targetRef->uid;
}

std::vector<EndpointSubset> sortSubsets(std::vector<EndpointSubset> subsets) {
  for (auto& s : subsets) {
    std::sort(s.addresses.begin(), s.addresses.end(), lessEndpointAddress);
    std::sort(s.notReadyAddresses.begin(), s.notReadyAddresses.end(), lessEndpointAddress);
    std::sort(s.ports.begin(), s.ports.end(),
              [](const EndpointPort& x, const EndpointPort& y) { return hashPort(x) < hashPort(y); });
  }
  std::vector<std::pair<unsigned __int128, size_t>> order;
  for (size_t i = 0; i < subsets.size(); ++i) order.emplace_back(hashSubset(subsets[i]), i);
  std::sort(order.begin(), order.end());
  std::vector<EndpointSubset> out;
  out.reserve(subsets.size());
  for (const auto& [h, i] : order) out.push_back(std::move(subsets[i]));
  return out;
}

std::vector<EndpointSubset> repackSubsets(const std::vector<EndpointSubset>& subsets) {
  // Addresses are one object per (ip, target uid), the first seen; per port, each address's readiness (once not
  // ready for a port, not ready there). No port: the sentinel -1.
  std::map<std::pair<std::string, std::string>, size_t> addrIndex;
  std::vector<EndpointAddress> addrs;
  std::map<PortKey, std::map<size_t, bool>> byPort;
  std::map<PortKey, EndpointPort> portValue;
  auto map = [&](const EndpointAddress& a, const EndpointPort& port, bool ready) {
    auto key = std::make_pair(a.ip, targetUID(a));
    auto [it, added] = addrIndex.emplace(key, addrs.size());
    if (added) addrs.push_back(a);
    PortKey pk = portKey(port);
    portValue.emplace(pk, port);
    auto& set = byPort[pk];
    auto found = set.find(it->second);
    if (found == set.end() || found->second) set[it->second] = ready;
  };
  for (const auto& s : subsets) {
    std::vector<EndpointPort> ports = s.ports;
    if (ports.empty()) {
      EndpointPort sentinel;
      sentinel.port = -1;
      ports.push_back(sentinel);
    }
    for (const auto& port : ports) {
      for (const auto& a : s.addresses) map(a, port, true);
      for (const auto& a : s.notReadyAddresses) map(a, port, false);
    }
  }
  // Group the ports by their (address, ready) set.
  std::map<std::map<size_t, bool>, std::vector<EndpointPort>> groups;
  for (const auto& [pk, set] : byPort) {
    auto& ports = groups[set];
    if (std::get<1>(pk) > 0) ports.push_back(portValue.at(pk));  // the sentinel adds no port
  }
  std::vector<EndpointSubset> out;
  for (auto& [set, ports] : groups) {
    EndpointSubset s;
    for (const auto& [idx, ready] : set) (ready ? s.addresses : s.notReadyAddresses).push_back(addrs[idx]);
    s.ports = std::move(ports);
    out.push_back(std::move(s));
  }
  return sortSubsets(std::move(out));
}

bool subsetsEqualIgnoreResourceVersion(const std::vector<EndpointSubset>& a, const std::vector<EndpointSubset>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!sameAddresses(a[i].addresses, b[i].addresses) || !sameAddresses(a[i].notReadyAddresses, b[i].notReadyAddresses) ||
        !samePorts(a[i].ports, b[i].ports))
      return false;
  return true;
}

}  // namespace kcm::controllers::endpoint
