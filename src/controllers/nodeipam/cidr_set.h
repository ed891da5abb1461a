#pragma once
// CidrSet (upstream pkg/controller/nodeipam/ipam/cidrset): the /mask subnets of one cluster CIDR (IPv4 or IPv6) as
// a bitmap, allocated round-robin from a rotating candidate so a just-released range is not handed out again at
// once. Not thread-safe; the allocator locks around it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace kcm::controllers {

struct IpCidr {
  bool v6 = false;
  unsigned __int128 base = 0;  // network address, host order
  int prefix = 0;
  int bits() const { return v6 ? 128 : 32; }
  static Result<IpCidr> parse(const std::string& s);
  std::string toString() const;
};

class CidrSet {
 public:
  // Upstream refuses IPv6 sets of more than 2^16 subnets; we also bound IPv4 sets at 2^24 (a 2 MiB bitmap).
  static Result<CidrSet> create(const IpCidr& cluster, int nodeMaskSize);
  // The next free subnet, or "CIDR allocation failed; there are no remaining CIDRs left to allocate in the
  // accepted range".
  Result<IpCidr> allocateNext();
  // Marks every subnet that overlaps `cidr` as used (existing node CIDRs, the service range).
  Status occupy(const IpCidr& cidr);
  Status release(const IpCidr& cidr);
  bool overlaps(const IpCidr& cidr) const { return range(cidr).has_value(); }
  const IpCidr& cluster() const { return cluster_; }
  size_t used() const { return used_; }
  size_t size() const { return bits_.size(); }

 private:
  // Index range [first, last] of the subnets overlapping cidr; nullopt when outside the cluster CIDR or of the
  // other family.
  std::optional<std::pair<size_t, size_t>> range(const IpCidr& cidr) const;
  IpCidr cluster_;
  int mask_ = 24;
  std::vector<bool> bits_;
  size_t used_ = 0;
  size_t next_ = 0;
};

}  // namespace kcm::controllers
