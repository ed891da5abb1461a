#include "controllers/certificates/csr.h"

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace kcm::controllers::certificates {
namespace {

std::string utf8(const ASN1_STRING* s) {
  unsigned char* out = nullptr;
  int n = ASN1_STRING_to_UTF8(&out, s);
  if (n < 0) return "";
  std::string r(reinterpret_cast<char*>(out), n);
  OPENSSL_free(out);
  return r;
}

std::string ia5(const ASN1_IA5STRING* s) {
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)), ASN1_STRING_length(s));
}

void fillSubject(X509_NAME* name, ParsedCSR& out) {
  for (int i = 0; i < X509_NAME_entry_count(name); ++i) {
    X509_NAME_ENTRY* e = X509_NAME_get_entry(name, i);
    const std::string v = utf8(X509_NAME_ENTRY_get_data(e));
    switch (OBJ_obj2nid(X509_NAME_ENTRY_get_object(e))) {
      case NID_countryName: out.country.push_back(v); break;
      case NID_organizationName: out.organization.push_back(v); break;
      case NID_organizationalUnitName: out.organizationalUnit.push_back(v); break;
      case NID_commonName: out.commonName = v; break;
      case NID_serialNumber: out.serialNumber = v; break;
      case NID_localityName: out.locality.push_back(v); break;
      case NID_stateOrProvinceName: out.province.push_back(v); break;
      case NID_streetAddress: out.streetAddress.push_back(v); break;
      case NID_postalCode: out.postalCode.push_back(v); break;
      default: break;  // kept out of the issued subject, as Go's pkix.Name does
    }
  }
}

Status fillSANs(X509_REQ* req, ParsedCSR& out) {
  STACK_OF(X509_EXTENSION)* exts = X509_REQ_get_extensions(req);
  if (!exts) return Status::Ok();
  Status st = Status::Ok();
  int idx = X509v3_get_ext_by_NID(exts, NID_subject_alt_name, -1);
  if (idx >= 0) {
    auto* names = static_cast<GENERAL_NAMES*>(X509V3_EXT_d2i(sk_X509_EXTENSION_value(exts, idx)));
    if (!names) {
      st = Status(StatusCode::kInvalidArgument, "x509: failed to parse subjectAltName extension");
    } else {
      for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
        const GENERAL_NAME* g = sk_GENERAL_NAME_value(names, i);
        switch (g->type) {
          case GEN_DNS: out.dnsNames.push_back(ia5(g->d.dNSName)); break;
          case GEN_EMAIL: out.emailAddresses.push_back(ia5(g->d.rfc822Name)); break;
          case GEN_URI: out.uris.push_back(ia5(g->d.uniformResourceIdentifier)); break;
          case GEN_IPADD: {
            int n = ASN1_STRING_length(g->d.iPAddress);
            if (n != 4 && n != 16) {
              st = Status(StatusCode::kInvalidArgument,
                          "x509: cannot parse IP address of length " + std::to_string(n));
              break;
            }
            out.ipAddresses.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(g->d.iPAddress)), n);
            break;
          }
          default: break;
        }
      }
      GENERAL_NAMES_free(names);
    }
  }
  sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
  return st;
}

}  // namespace

Approval getCertApprovalCondition(const api::certificates::v1::CertificateSigningRequestStatus& s) {
  Approval a;
  for (const auto& c : s.conditions) {
    if (c.type == "Approved") a.approved = true;
    if (c.type == "Denied") a.denied = true;
  }
  return a;
}

bool isCertificateRequestApproved(const CertificateSigningRequest& csr) {
  Approval a = getCertApprovalCondition(csr.status);
  return a.approved && !a.denied;
}

bool hasTrueCondition(const CertificateSigningRequest& csr, const std::string& type) {
  for (const auto& c : csr.status.conditions)
    if (c.type == type && (c.status.empty() || c.status == "True")) return true;
  return false;
}

Result<ParsedCSR> parseCSR(const std::string& pem) {
  const Status notARequest(StatusCode::kInvalidArgument, "PEM block type must be CERTIFICATE REQUEST");
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  char* name = nullptr;
  char* header = nullptr;
  unsigned char* data = nullptr;
  long len = 0;
  if (!bio || PEM_read_bio(bio.get(), &name, &header, &data, &len) != 1) return notARequest;
  const bool isRequest = std::string(name) == "CERTIFICATE REQUEST";
  std::string der(reinterpret_cast<char*>(data), static_cast<size_t>(len));
  OPENSSL_free(name);
  OPENSSL_free(header);
  OPENSSL_free(data);
  if (!isRequest) return notARequest;
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  X509_REQ* req = d2i_X509_REQ(nullptr, &p, static_cast<long>(der.size()));
  if (!req) return Status(StatusCode::kInvalidArgument, "asn1: structure error: malformed certificate request");
  ParsedCSR out;
  out.req.reset(req, X509_REQ_free);
  if (p != reinterpret_cast<const unsigned char*>(der.data()) + der.size())
    return Status(StatusCode::kInvalidArgument, "x509: trailing data");
  fillSubject(X509_REQ_get_subject_name(req), out);
  if (Status st = fillSANs(req, out); !st.ok()) return st;
  return out;
}

namespace {

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string listText(const std::set<std::string>& s) {
  std::string r = "[";
  for (const auto& u : s) r += (r.size() > 1 ? " " : "") + u;
  return r + "]";
}

Status invalid(const std::string& m) { return Status(StatusCode::kInvalidArgument, m); }

}  // namespace

Status validateKubeletServingCSR(const ParsedCSR& req, const std::set<std::string>& usages) {
  static const std::set<std::string> required{"digital signature", "key encipherment", "server auth"};
  static const std::set<std::string> requiredNoRSA{"digital signature", "server auth"};
  if (req.organization != std::vector<std::string>{"system:nodes"})
    return invalid("subject organization is not system:nodes");
  if (req.dnsNames.empty() && req.ipAddresses.empty()) return invalid("DNS or IP subjectAltName is required");
  if (!req.emailAddresses.empty()) return invalid("Email subjectAltNames are not allowed");
  if (!req.uris.empty()) return invalid("URI subjectAltNames are not allowed");
  if (usages != required && usages != requiredNoRSA) return invalid("usages did not match " + listText(required));
  if (!startsWith(req.commonName, "system:node:")) return invalid("subject common name does not begin with system:node:");
  return Status::Ok();
}

Status validateKubeletClientCSR(const ParsedCSR& req, const std::set<std::string>& usages) {
  static const std::set<std::string> required{"digital signature", "key encipherment", "client auth"};
  static const std::set<std::string> requiredNoRSA{"digital signature", "client auth"};
  if (req.organization != std::vector<std::string>{"system:nodes"})
    return invalid("subject organization is not system:nodes");
  if (!req.dnsNames.empty()) return invalid("DNS subjectAltNames are not allowed");
  if (!req.emailAddresses.empty()) return invalid("Email subjectAltNames are not allowed");
  if (!req.ipAddresses.empty()) return invalid("IP subjectAltNames are not allowed");
  if (!req.uris.empty()) return invalid("URI subjectAltNames are not allowed");
  if (!startsWith(req.commonName, "system:node:")) return invalid("subject common name does not begin with system:node:");
  if (usages != required && usages != requiredNoRSA) return invalid("usages did not match " + listText(required));
  return Status::Ok();
}

}  // namespace kcm::controllers::certificates
