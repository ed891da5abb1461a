#include "controllers/certificates/authority.h"
#include "client/key_pair.h"

#include "base/duration.h"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cctype>
#include <cstring>
#include <set>
#include <ctime>

#include "base/file.h"
#include "base/log.h"

namespace kcm::controllers::certificates {
namespace {

std::string opensslError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "unknown error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  return buf;
}

std::string quoted(const std::string& s) { return "\"" + s + "\""; }

// Key usages: Go's x509.KeyUsage bit (its index in the keyUsage BIT STRING), then extended key usages in Go's
// ExtKeyUsage enum order, which is the order they are encoded in.
struct UsageBit {
  const char* name;
  int bit;
};
constexpr UsageBit kKeyUsages[] = {
    {"signing", 0},        {"digital signature", 0}, {"content commitment", 1}, {"key encipherment", 2},
    {"key agreement", 4},  {"data encipherment", 3}, {"cert sign", 5},          {"crl sign", 6},
    {"encipher only", 7},  {"decipher only", 8},
};
struct ExtUsage {
  const char* name;
  int rank;  // Go's ExtKeyUsage value
  int nid;
};
const ExtUsage kExtUsages[] = {
    {"any", 0, NID_anyExtendedKeyUsage},  {"server auth", 1, NID_server_auth},
    {"client auth", 2, NID_client_auth},  {"code signing", 3, NID_code_sign},
    {"email protection", 4, NID_email_protect}, {"s/mime", 4, NID_email_protect},
    {"ipsec end system", 5, NID_ipsecEndSystem}, {"ipsec tunnel", 6, NID_ipsecTunnel},
    {"ipsec user", 7, NID_ipsecUser},     {"timestamping", 8, NID_time_stamp},
    {"ocsp signing", 9, NID_OCSP_sign},   {"microsoft sgc", 10, NID_ms_sgc},
    {"netscape sgc", 11, NID_ns_sgc},
};

SysTime asn1TimeToSys(const ASN1_TIME* t) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(t, &tm) != 1) return {};
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

// Go's asn1 encodes a string as PrintableString when every character allows it, else UTF8String.
bool printable(const std::string& s) {
  for (unsigned char c : s) {
    if (std::isalnum(c)) continue;
    if (!std::strchr(" '()+,-./:=?", c) || c == 0) return false;
  }
  return true;
}

// pkix.Name.ToRDNSequence: one RDN per attribute type (multi-valued when repeated), in its fixed order.
bool buildSubject(const ParsedCSR& r, X509_NAME* name) {
  auto add = [&](int nid, const std::vector<std::string>& values) {
    for (size_t i = 0; i < values.size(); ++i) {
      const std::string& v = values[i];
      int type = printable(v) ? V_ASN1_PRINTABLESTRING : V_ASN1_UTF8STRING;
      if (X509_NAME_add_entry_by_NID(name, nid, type, reinterpret_cast<const unsigned char*>(v.data()),
                                     static_cast<int>(v.size()), -1, i == 0 ? 0 : -1) != 1)
        return false;
    }
    return true;
  };
  std::vector<std::string> cn, sn;
  if (!r.commonName.empty()) cn.push_back(r.commonName);
  if (!r.serialNumber.empty()) sn.push_back(r.serialNumber);
  return add(NID_countryName, r.country) && add(NID_stateOrProvinceName, r.province) &&
         add(NID_localityName, r.locality) && add(NID_streetAddress, r.streetAddress) &&
         add(NID_postalCode, r.postalCode) && add(NID_organizationName, r.organization) &&
         add(NID_organizationalUnitName, r.organizationalUnit) && add(NID_commonName, cn) &&
         add(NID_serialNumber, sn);
}

bool addExt(X509* x, int nid, int critical, void* value) {
  X509_EXTENSION* ext = X509V3_EXT_i2d(nid, critical, value);
  if (!ext) return false;
  bool ok = X509_add_ext(x, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

GENERAL_NAME* stringName(int type, const std::string& v) {
  ASN1_IA5STRING* s = ASN1_IA5STRING_new();
  ASN1_STRING_set(s, v.data(), static_cast<int>(v.size()));
  GENERAL_NAME* g = GENERAL_NAME_new();
  GENERAL_NAME_set0_value(g, type, s);
  return g;
}

// marshalSANs: DNS names, emails, IPs (IPv4 as 4 bytes), URIs.
bool addSANs(X509* x, const ParsedCSR& r, bool critical) {
  if (r.dnsNames.empty() && r.emailAddresses.empty() && r.ipAddresses.empty() && r.uris.empty()) return true;
  GENERAL_NAMES* names = sk_GENERAL_NAME_new_null();
  for (const auto& d : r.dnsNames) sk_GENERAL_NAME_push(names, stringName(GEN_DNS, d));
  for (const auto& e : r.emailAddresses) sk_GENERAL_NAME_push(names, stringName(GEN_EMAIL, e));
  for (std::string ip : r.ipAddresses) {
    static const char kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, '\xff', '\xff'};
    if (ip.size() == 16 && std::memcmp(ip.data(), kV4Mapped, 12) == 0) ip = ip.substr(12);
    ASN1_OCTET_STRING* o = ASN1_OCTET_STRING_new();
    ASN1_OCTET_STRING_set(o, reinterpret_cast<const unsigned char*>(ip.data()), static_cast<int>(ip.size()));
    GENERAL_NAME* g = GENERAL_NAME_new();
    GENERAL_NAME_set0_value(g, GEN_IPADD, o);
    sk_GENERAL_NAME_push(names, g);
  }
  for (const auto& u : r.uris) sk_GENERAL_NAME_push(names, stringName(GEN_URI, u));
  bool ok = addExt(x, NID_subject_alt_name, critical ? 1 : 0, names);
  GENERAL_NAMES_free(names);
  return ok;
}

const EVP_MD* digestFor(EVP_PKEY* key) {
  switch (EVP_PKEY_base_id(key)) {
    case EVP_PKEY_ED25519: return nullptr;
    case EVP_PKEY_EC: {
      int bits = EVP_PKEY_bits(key);
      if (bits > 384) return EVP_sha512();
      if (bits > 256) return EVP_sha384();
      return EVP_sha256();
    }
    default: return EVP_sha256();
  }
}

}  // namespace

// x509 times are whole seconds: Go prints them without a fraction, as goTime does.
std::string goTimeString(SysTime t) { return goTime(std::chrono::time_point_cast<std::chrono::seconds>(t)); }

Result<KeyUsages> keyUsagesFromStrings(const std::vector<std::string>& usages) {
  KeyUsages out;
  std::vector<std::string> unrecognized;
  std::set<int> ranks;
  for (const auto& u : usages) {
    bool found = false;
    for (const auto& k : kKeyUsages)
      if (u == k.name) {
        out.keyUsage |= 1u << k.bit;
        found = true;
      }
    if (!found)
      for (const auto& e : kExtUsages)
        if (u == e.name) {
          ranks.insert(e.rank);
          found = true;
          break;
        }
    if (!found) unrecognized.push_back(u);
  }
  if (!unrecognized.empty()) {
    std::string list = "[";
    for (const auto& u : unrecognized) list += (list.size() > 1 ? " " : "") + quoted(u);
    return Status(StatusCode::kInvalidArgument, "unrecognized usage values: " + list + "]");
  }
  for (int rank : ranks)
    for (const auto& e : kExtUsages)
      if (e.rank == rank) {
        out.extKeyUsageNids.push_back(e.nid);
        break;
      }
  return out;
}

Result<std::shared_ptr<CertificateAuthority>> CertificateAuthority::fromPEM(const std::string& certPEM,
                                                                          const std::string& keyPEM,
                                                                          const std::string& name) {
  auto ca = std::make_shared<CertificateAuthority>();
  ca->rawCert_ = certPEM;
  ca->rawKey_ = keyPEM;
  {
    std::unique_ptr<BIO, decltype(&BIO_free)> b(BIO_new_mem_buf(certPEM.data(), static_cast<int>(certPEM.size())),
                                                 BIO_free);
    int n = 0;
    while (X509* c = PEM_read_bio_X509(b.get(), nullptr, nullptr, nullptr)) {
      if (n++ == 0) ca->cert_.reset(c, X509_free);
      else X509_free(c);
    }
    ERR_clear_error();
    if (n == 0)
      return Status(StatusCode::kInvalidArgument,
                    "error reading CA cert file " + quoted(name) + ": data does not contain any valid RSA or ECDSA "
                    "certificates");
    if (n != 1)
      return Status(StatusCode::kInvalidArgument, "error reading CA cert file " + quoted(name) +
                                                      ": expected 1 certificate, found " + std::to_string(n));
  }
  {
    std::unique_ptr<BIO, decltype(&BIO_free)> b(BIO_new_mem_buf(keyPEM.data(), static_cast<int>(keyPEM.size())),
                                                 BIO_free);
    EVP_PKEY* k = PEM_read_bio_PrivateKey(b.get(), nullptr, nullptr, nullptr);
    if (!k)
      return Status(StatusCode::kInvalidArgument, "error reading CA key file " + quoted(name) +
                                                      ": data does not contain a valid RSA or ECDSA private key (" +
                                                      opensslError() + ")");
    ca->key_.reset(k, EVP_PKEY_free);
  }
  if (!client::privateKeyMatches(ca->key_.get(), X509_get0_pubkey(ca->cert_.get()))) {
    ERR_clear_error();
    return Status(StatusCode::kInvalidArgument,
                  "error reading CA cert file " + quoted(name) + ": tls: private key does not match public key");
  }
  ca->notAfter_ = asn1TimeToSys(X509_get0_notAfter(ca->cert_.get()));
  return ca;
}

Result<std::string> CertificateAuthority::sign(const ParsedCSR& r, const PermissiveSigningPolicy& p) const {
  X509_REQ* req = r.req.get();
  EVP_PKEY* pub = X509_REQ_get0_pubkey(req);
  if (!pub) return Status(StatusCode::kInvalidArgument, "unable to parse certificate request: x509: unsupported public key");
  switch (EVP_PKEY_base_id(pub)) {
    case EVP_PKEY_RSA: case EVP_PKEY_EC: case EVP_PKEY_ED25519: break;
    default: return Status(StatusCode::kInvalidArgument, "failed to sign certificate: x509: unsupported public key type");
  }
  if (X509_REQ_verify(req, pub) != 1)
    return Status(StatusCode::kInvalidArgument,
                  "unable to verify certificate request signature: x509: signature verification failure (" +
                      opensslError() + ")");
  // policy.apply
  const SysTime now = std::chrono::time_point_cast<std::chrono::seconds>(
      p.now == SysTime{} ? std::chrono::system_clock::now() : p.now);
  auto ku = keyUsagesFromStrings(p.usages);
  if (!ku.ok()) return ku.status();
  SysTime notBefore = now - p.backdate;
  SysTime notAfter = p.ttl < p.shortTTL ? now + p.ttl : now + p.ttl - p.backdate;
  if (!(notAfter < notAfter_)) notAfter = notAfter_;
  if (!(notBefore < notAfter_))
    return Status(StatusCode::kInvalidArgument, "the signer has expired: NotAfter=" + goTimeString(notAfter_));
  if (!(now < notAfter_))
    return Status(StatusCode::kInvalidArgument,
                  "refusing to sign a certificate that expired in the past: NotAfter=" + goTimeString(notAfter_));

  std::unique_ptr<X509, decltype(&X509_free)> x(X509_new(), X509_free);
  bool ok = X509_set_version(x.get(), 2) == 1;
  {
    unsigned char serial[16];
    if (RAND_bytes(serial, sizeof serial) != 1)
      return Status(StatusCode::kInternal, "unable to generate a serial number for " + r.commonName + ": " + opensslError());
    BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
    ok = ok && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x.get())) != nullptr;
    BN_free(bn);
  }
  ok = ok && X509_set_issuer_name(x.get(), X509_get_subject_name(cert_.get())) == 1;
  X509_NAME* subject = X509_NAME_new();
  ok = ok && buildSubject(r, subject) && X509_set_subject_name(x.get(), subject) == 1;
  const bool emptySubject = X509_NAME_entry_count(subject) == 0;
  const bool sameAsIssuer = X509_NAME_cmp(subject, X509_get_subject_name(cert_.get())) == 0;
  X509_NAME_free(subject);
  ok = ok && ASN1_TIME_set(X509_getm_notBefore(x.get()), std::chrono::system_clock::to_time_t(notBefore)) &&
       ASN1_TIME_set(X509_getm_notAfter(x.get()), std::chrono::system_clock::to_time_t(notAfter));
  ok = ok && X509_set_pubkey(x.get(), pub) == 1;
  // Extensions in x509.buildCertExtensions' order.
  if (ok && ku->keyUsage != 0) {
    ASN1_BIT_STRING* bits = ASN1_BIT_STRING_new();
    for (int b = 0; b < 9; ++b)
      if (ku->keyUsage & (1u << b)) ASN1_BIT_STRING_set_bit(bits, b, 1);
    ok = addExt(x.get(), NID_key_usage, 1, bits);
    ASN1_BIT_STRING_free(bits);
  }
  if (ok && !ku->extKeyUsageNids.empty()) {
    EXTENDED_KEY_USAGE* eku = sk_ASN1_OBJECT_new_null();
    for (int nid : ku->extKeyUsageNids) sk_ASN1_OBJECT_push(eku, OBJ_dup(OBJ_nid2obj(nid)));
    ok = addExt(x.get(), NID_ext_key_usage, 0, eku);
    sk_ASN1_OBJECT_pop_free(eku, ASN1_OBJECT_free);
  }
  if (ok) {
    BASIC_CONSTRAINTS* bc = BASIC_CONSTRAINTS_new();
    bc->ca = 0;
    ok = addExt(x.get(), NID_basic_constraints, 1, bc);
    BASIC_CONSTRAINTS_free(bc);
  }
  const ASN1_OCTET_STRING* skid = X509_get0_subject_key_id(cert_.get());
  if (ok && skid && ASN1_STRING_length(skid) > 0 && !sameAsIssuer) {
    AUTHORITY_KEYID* akid = AUTHORITY_KEYID_new();
    akid->keyid = ASN1_OCTET_STRING_dup(skid);
    ok = addExt(x.get(), NID_authority_key_identifier, 0, akid);
    AUTHORITY_KEYID_free(akid);
  }
  ok = ok && addSANs(x.get(), r, emptySubject);
  if (!ok) return Status(StatusCode::kInternal, "failed to sign certificate: " + opensslError());
  if (X509_sign(x.get(), key_.get(), digestFor(key_.get())) <= 0)
    return Status(StatusCode::kInternal, "failed to sign certificate: " + opensslError());
  unsigned char* der = nullptr;
  int n = i2d_X509(x.get(), &der);
  if (n <= 0) return Status(StatusCode::kInternal, "failed to sign certificate: " + opensslError());
  std::string out(reinterpret_cast<char*>(der), n);
  OPENSSL_free(der);
  return out;
}

CAProvider::Stamp CAProvider::stampOf(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {static_cast<long long>(st.st_size),
          static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec,
          static_cast<long long>(st.st_ino)};
}

Status CAProvider::load() {
  certStamp_ = stampOf(certFile_);
  keyStamp_ = stampOf(keyFile_);
  auto cert = readFile(certFile_);
  if (!cert.ok()) return Status(StatusCode::kInvalidArgument, "error reading CA cert file " + quoted(certFile_) + ": " +
                                                                  cert.status().message());
  auto key = readFile(keyFile_);
  if (!key.ok()) return Status(StatusCode::kInvalidArgument, "error reading CA key file " + quoted(keyFile_) + ": " +
                                                                 key.status().message());
  if (ca_ && ca_->rawCert() == *cert && ca_->rawKey() == *key) return Status::Ok();
  auto ca = CertificateAuthority::fromPEM(*cert, *key, certFile_);
  if (!ca.ok()) return ca.status();
  ca_ = *ca;
  return Status::Ok();
}

Result<std::shared_ptr<CAProvider>> CAProvider::create(const std::string& certFile, const std::string& keyFile) {
  auto p = std::make_shared<CAProvider>();
  p->certFile_ = certFile;
  p->keyFile_ = keyFile;
  if (Status st = p->load(); !st.ok()) return st;
  return p;
}

Result<std::shared_ptr<const CertificateAuthority>> CAProvider::currentCA() {
  std::lock_guard l(mu_);
  if (stampOf(certFile_) != certStamp_ || stampOf(keyFile_) != keyStamp_) {
    // A pair that does not load is not taken (upstream's file watcher keeps the last good content).
    auto before = ca_;
    if (Status st = load(); !st.ok())
      KLOG_ERROR("\"Failed to reload the CSR signing CA, keeping the previous one\" err=" + log::quote(st.message()));
    else if (ca_ != before)
      KLOG_INFO("\"Loaded a new CA Bundle and Verifier\" name=" + log::quote("csr-controller::" + certFile_ + "::" + keyFile_));
  }
  return ca_;
}

}  // namespace kcm::controllers::certificates
