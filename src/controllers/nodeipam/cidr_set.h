#pragma once
// CidrSet (upstream pkg/controller/nodeipam/ipam/cidrset): the /mask subnets of an IPv4 cluster CIDR as a bitmap,
// allocated round-robin from a rotating candidate so a just-released range is not handed out again at once.
// Not thread-safe; the allocator locks around it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace kcm::controllers {

struct Ipv4Cidr {
  uint32_t base = 0;  // network address, host order
  int prefix = 0;
  static Result<Ipv4Cidr> parse(const std::string& s);
  std::string toString() const;
  bool contains(uint32_t ip) const;
};

class CidrSet {
 public:
  static Result<CidrSet> create(const Ipv4Cidr& cluster, int nodeMaskSize);
  // The next free subnet, or ResourceExhausted-like error "CIDR allocation failed; there are no remaining CIDRs
  // left to allocate in the accepted range".
  Result<Ipv4Cidr> allocateNext();
  // Marks every subnet that overlaps `cidr` as used (existing node CIDRs, the service range).
  Status occupy(const Ipv4Cidr& cidr);
  Status release(const Ipv4Cidr& cidr);
  size_t used() const { return used_; }
  size_t size() const { return bits_.size(); }

 private:
  // Index range [first, last] of the subnets overlapping cidr; nullopt when outside the cluster CIDR.
  std::optional<std::pair<size_t, size_t>> range(const Ipv4Cidr& cidr) const;
  Ipv4Cidr cluster_;
  int mask_ = 24;
  std::vector<bool> bits_;
  size_t used_ = 0;
  size_t next_ = 0;
};

}  // namespace kcm::controllers
