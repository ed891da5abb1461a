#include "controllers/nodeipam/cidr_set.h"

#include <arpa/inet.h>

#include <cstdlib>

namespace kcm::controllers {

Result<Ipv4Cidr> Ipv4Cidr::parse(const std::string& s) {
  auto slash = s.find('/');
  if (slash == std::string::npos) return Status(StatusCode::kInvalidArgument, "invalid CIDR address: " + s);
  in_addr a{};
  if (inet_pton(AF_INET, s.substr(0, slash).c_str(), &a) != 1)
    return Status(StatusCode::kInvalidArgument, "invalid CIDR address: " + s);
  char* end = nullptr;
  long p = std::strtol(s.c_str() + slash + 1, &end, 10);
  if (*end || p < 0 || p > 32) return Status(StatusCode::kInvalidArgument, "invalid CIDR address: " + s);
  Ipv4Cidr c;
  c.prefix = static_cast<int>(p);
  uint32_t mask = c.prefix == 0 ? 0 : ~uint32_t{0} << (32 - c.prefix);
  c.base = ntohl(a.s_addr) & mask;
  return c;
}

std::string Ipv4Cidr::toString() const {
  in_addr a{};
  a.s_addr = htonl(base);
  char buf[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return std::string(buf) + "/" + std::to_string(prefix);
}

bool Ipv4Cidr::contains(uint32_t ip) const {
  uint32_t mask = prefix == 0 ? 0 : ~uint32_t{0} << (32 - prefix);
  return (ip & mask) == base;
}

Result<CidrSet> CidrSet::create(const Ipv4Cidr& cluster, int nodeMaskSize) {
  // Upstream caps the number of subnets a cluster CIDR can be split into (mask - prefix <= 16).
  if (nodeMaskSize < cluster.prefix)
    return Status(StatusCode::kInvalidArgument, "invalid --node-cidr-mask-size: it must be larger than the cluster CIDR's");
  if (nodeMaskSize - cluster.prefix > 16)
    return Status(StatusCode::kInvalidArgument,
                  "CIDRSet count would be too large: the cluster CIDR " + cluster.toString() + " split into /" +
                      std::to_string(nodeMaskSize) + " has more than 65536 subnets");
  CidrSet s;
  s.cluster_ = cluster;
  s.mask_ = nodeMaskSize;
  s.bits_.assign(size_t{1} << (nodeMaskSize - cluster.prefix), false);
  return s;
}

Result<Ipv4Cidr> CidrSet::allocateNext() {
  for (size_t i = 0; i < bits_.size(); ++i) {
    size_t idx = (next_ + i) % bits_.size();
    if (bits_[idx]) continue;
    bits_[idx] = true;
    ++used_;
    next_ = (idx + 1) % bits_.size();
    Ipv4Cidr c;
    c.base = cluster_.base + static_cast<uint32_t>(idx << (32 - mask_));
    c.prefix = mask_;
    return c;
  }
  return Status(StatusCode::kUnavailable,
                "CIDR allocation failed; there are no remaining CIDRs left to allocate in the accepted range");
}

std::optional<std::pair<size_t, size_t>> CidrSet::range(const Ipv4Cidr& cidr) const {
  uint64_t clusterStart = cluster_.base, clusterEnd = clusterStart + (uint64_t{1} << (32 - cluster_.prefix)) - 1;
  uint64_t start = cidr.base, end = start + (uint64_t{1} << (32 - cidr.prefix)) - 1;
  if (end < clusterStart || start > clusterEnd) return std::nullopt;
  start = std::max(start, clusterStart);
  end = std::min(end, clusterEnd);
  return std::pair{static_cast<size_t>((start - clusterStart) >> (32 - mask_)),
                   static_cast<size_t>((end - clusterStart) >> (32 - mask_))};
}

Status CidrSet::occupy(const Ipv4Cidr& cidr) {
  auto r = range(cidr);
  if (!r) return Status(StatusCode::kInvalidArgument, "CIDR " + cidr.toString() + " is outside " + cluster_.toString());
  for (size_t i = r->first; i <= r->second; ++i)
    if (!bits_[i]) {
      bits_[i] = true;
      ++used_;
    }
  return Status::Ok();
}

Status CidrSet::release(const Ipv4Cidr& cidr) {
  auto r = range(cidr);
  if (!r) return Status(StatusCode::kInvalidArgument, "CIDR " + cidr.toString() + " is outside " + cluster_.toString());
  for (size_t i = r->first; i <= r->second; ++i)
    if (bits_[i]) {
      bits_[i] = false;
      --used_;
    }
  return Status::Ok();
}

}  // namespace kcm::controllers
