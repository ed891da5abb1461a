#include "controllers/nodeipam/cidr_set.h"

#include <arpa/inet.h>

#include <cstdlib>

#include "base/metrics.h"

namespace kcm::controllers {

namespace {
using u128 = unsigned __int128;

// 2^n - 1 without overflowing for n = 128.
u128 lowOnes(int n) { return n >= 128 ? ~u128{0} : (u128{1} << n) - 1; }

// upstream's cidrset metrics, vectors by clusterCIDR (the max gauge's name is upstream's, misspelling included;
// so is the tries histogram's help).
metrics::Labels labelsOf(const IpCidr& c) { return {{"clusterCIDR", c.toString()}}; }
void countAllocations(const IpCidr& c, size_t n) {
  metrics::Registry::global()
      .counter("node_ipam_controller_cidrset_cidrs_allocations_total",
               "Counter measuring total number of CIDR allocations.", labelsOf(c))
      .inc(static_cast<double>(n));
}
void setUsage(const IpCidr& c, size_t used, size_t max) {
  metrics::Registry::global()
      .gauge("node_ipam_controller_cidrset_usage_cidrs", "Gauge measuring percentage of allocated CIDRs.",
             labelsOf(c))
      .set(static_cast<double>(used) / static_cast<double>(max));
}
}  // namespace

Result<IpCidr> IpCidr::parse(const std::string& s) {
  auto slash = s.find('/');
  if (slash == std::string::npos) return Status(StatusCode::kInvalidArgument, "invalid CIDR address: " + s);
  const std::string addr = s.substr(0, slash);
  IpCidr c;
  c.v6 = addr.find(':') != std::string::npos;
  u128 ip = 0;
  if (c.v6) {
    in6_addr a{};
    if (inet_pton(AF_INET6, addr.c_str(), &a) != 1) return Status(StatusCode::kInvalidArgument, "invalid CIDR address: " + s);
    for (unsigned char b : a.s6_addr) ip = (ip << 8) | b;
  } else {
    in_addr a{};
    if (inet_pton(AF_INET, addr.c_str(), &a) != 1) return Status(StatusCode::kInvalidArgument, "invalid CIDR address: " + s);
    ip = ntohl(a.s_addr);
  }
  char* end = nullptr;
  long p = std::strtol(s.c_str() + slash + 1, &end, 10);
  if (*end || slash + 1 == s.size() || p < 0 || p > c.bits())
    return Status(StatusCode::kInvalidArgument, "invalid CIDR address: " + s);
  c.prefix = static_cast<int>(p);
  c.base = ip & ~lowOnes(c.bits() - c.prefix) & lowOnes(c.bits());
  return c;
}

std::string IpCidr::toString() const {
  char buf[INET6_ADDRSTRLEN];
  if (v6) {
    in6_addr a{};
    u128 v = base;
    for (int i = 15; i >= 0; --i, v >>= 8) a.s6_addr[i] = static_cast<unsigned char>(v & 0xff);
    inet_ntop(AF_INET6, &a, buf, sizeof buf);
  } else {
    in_addr a{};
    a.s_addr = htonl(static_cast<uint32_t>(base));
    inet_ntop(AF_INET, &a, buf, sizeof buf);
  }
  return std::string(buf) + "/" + std::to_string(prefix);
}

Result<CidrSet> CidrSet::create(const IpCidr& cluster, int nodeMaskSize) {
  if (nodeMaskSize < cluster.prefix || nodeMaskSize > cluster.bits())
    return Status(StatusCode::kInvalidArgument, "invalid node CIDR mask size /" + std::to_string(nodeMaskSize) +
                                                    " for the cluster CIDR " + cluster.toString());
  const int diff = nodeMaskSize - cluster.prefix;
  if (cluster.v6 && diff > 16)
    return Status(StatusCode::kInvalidArgument, "New CIDR set failed; the node CIDR size is too big");
  if (!cluster.v6 && diff > 24)
    return Status(StatusCode::kInvalidArgument, "the cluster CIDR " + cluster.toString() + " split into /" +
                                                    std::to_string(nodeMaskSize) + " has more than 2^24 subnets");
  CidrSet s;
  s.cluster_ = cluster;
  s.mask_ = nodeMaskSize;
  s.bits_.assign(size_t{1} << diff, false);
  metrics::Registry::global()
      .gauge("node_ipam_controller_cirdset_max_cidrs", "Maximum number of CIDRs that can be allocated.",
             labelsOf(cluster))
      .set(static_cast<double>(s.bits_.size()));
  return s;
}

Result<IpCidr> CidrSet::allocateNext() {
  for (size_t i = 0; i < bits_.size(); ++i) {
    size_t idx = (next_ + i) % bits_.size();
    if (bits_[idx]) continue;
    bits_[idx] = true;
    ++used_;
    next_ = (idx + 1) % bits_.size();
    countAllocations(cluster_, 1);
    metrics::Registry::global()
        .histogram("node_ipam_controller_cidrset_allocation_tries_per_request",
                   "Number of endpoints added on each Service sync", metrics::exponentialBuckets(1, 5, 5),
                   labelsOf(cluster_))
        .observe(static_cast<double>(i));
    setUsage(cluster_, used_, bits_.size());
    IpCidr c = cluster_;
    c.base = cluster_.base + (u128{idx} << (cluster_.bits() - mask_));
    c.prefix = mask_;
    return c;
  }
  return Status(StatusCode::kUnavailable,
                "CIDR allocation failed; there are no remaining CIDRs left to allocate in the accepted range");
}

std::optional<std::pair<size_t, size_t>> CidrSet::range(const IpCidr& cidr) const {
  if (cidr.v6 != cluster_.v6) return std::nullopt;
  const int bits = cluster_.bits();
  u128 clusterStart = cluster_.base, clusterEnd = clusterStart + lowOnes(bits - cluster_.prefix);
  u128 start = cidr.base, end = start + lowOnes(bits - cidr.prefix);
  if (end < clusterStart || start > clusterEnd) return std::nullopt;
  start = std::max(start, clusterStart);
  end = std::min(end, clusterEnd);
  const int shift = bits - mask_;
  return std::pair{static_cast<size_t>((start - clusterStart) >> shift),
                   static_cast<size_t>((end - clusterStart) >> shift)};
}

Status CidrSet::occupy(const IpCidr& cidr) {
  auto r = range(cidr);
  if (!r) return Status(StatusCode::kInvalidArgument, "CIDR " + cidr.toString() + " is outside " + cluster_.toString());
  size_t set = 0;
  for (size_t i = r->first; i <= r->second; ++i)
    if (!bits_[i]) {
      bits_[i] = true;
      ++used_;
      ++set;
    }
  if (set) countAllocations(cluster_, set);
  setUsage(cluster_, used_, bits_.size());
  return Status::Ok();
}

Status CidrSet::release(const IpCidr& cidr) {
  auto r = range(cidr);
  if (!r) return Status(StatusCode::kInvalidArgument, "CIDR " + cidr.toString() + " is outside " + cluster_.toString());
  size_t cleared = 0;
  for (size_t i = r->first; i <= r->second; ++i)
    if (bits_[i]) {
      bits_[i] = false;
      --used_;
      ++cleared;
    }
  if (cleared)
    metrics::Registry::global()
        .counter("node_ipam_controller_cidrset_cidrs_releases_total",
                 "Counter measuring total number of CIDR releases.", labelsOf(cluster_))
        .inc(static_cast<double>(cleared));
  setUsage(cluster_, used_, bits_.size());
  return Status::Ok();
}

}  // namespace kcm::controllers
