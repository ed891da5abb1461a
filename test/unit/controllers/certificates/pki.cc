#include "controllers/certificates/pki.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <ctime>
#include <memory>
#include <stdexcept>

namespace kcm::testing::pki {
namespace {

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

std::string drain(BIO* b) {
  char* p = nullptr;
  long n = BIO_get_mem_data(b, &p);
  return std::string(p, static_cast<size_t>(n));
}

Key load(const KeyPair& k) {
  Bio b(BIO_new_mem_buf(k.privatePEM.data(), static_cast<int>(k.privatePEM.size())), BIO_free);
  return Key(PEM_read_bio_PrivateKey(b.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
}

KeyPair fromKey(EVP_PKEY* k) {
  Bio b(BIO_new(BIO_s_mem()), BIO_free);
  PEM_write_bio_PrivateKey(b.get(), k, nullptr, nullptr, 0, nullptr, nullptr);
  EVP_PKEY_free(k);
  return {drain(b.get())};
}

std::string line(X509_NAME* n) {
  Bio b(BIO_new(BIO_s_mem()), BIO_free);
  X509_NAME_print_ex(b.get(), n, 0, XN_FLAG_RFC2253);
  return drain(b.get());
}

std::chrono::system_clock::time_point sysTime(const ASN1_TIME* t) {
  std::tm tm{};
  ASN1_TIME_to_tm(t, &tm);
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

void addName(X509_NAME* n, const std::vector<std::pair<std::string, std::string>>& subject) {
  for (const auto& [k, v] : subject)
    X509_NAME_add_entry_by_txt(n, k.c_str(), MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(v.c_str()), -1, -1, 0);
}

}  // namespace

KeyPair rsaKey(int bits) { return fromKey(EVP_RSA_gen(bits)); }
KeyPair ecKey() { return fromKey(EVP_EC_gen("P-256")); }
KeyPair ed25519Key() { return fromKey(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519")); }

std::string selfSignedCA(const KeyPair& key, const std::string& cn, std::chrono::system_clock::time_point notBefore,
                         std::chrono::system_clock::time_point notAfter) {
  Key k = load(key);
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  addName(X509_get_subject_name(x), {{"CN", cn}});
  X509_set_issuer_name(x, X509_get_subject_name(x));
  ASN1_TIME_set(X509_getm_notBefore(x), std::chrono::system_clock::to_time_t(notBefore));
  ASN1_TIME_set(X509_getm_notAfter(x), std::chrono::system_clock::to_time_t(notAfter));
  X509_set_pubkey(x, k.get());
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
  for (auto [nid, value] : {std::pair{NID_basic_constraints, "critical,CA:TRUE"},
                            std::pair{NID_key_usage, "critical,keyCertSign,digitalSignature"},
                            std::pair{NID_subject_key_identifier, "hash"}}) {
    X509_EXTENSION* e = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    X509_add_ext(x, e, -1);
    X509_EXTENSION_free(e);
  }
  X509_sign(x, k.get(), EVP_PKEY_base_id(k.get()) == EVP_PKEY_ED25519 ? nullptr : EVP_sha256());
  Bio b(BIO_new(BIO_s_mem()), BIO_free);
  PEM_write_bio_X509(b.get(), x);
  X509_free(x);
  return drain(b.get());
}

std::string csrPEM(const KeyPair& key, const Request& r) {
  Key k = load(key);
  X509_REQ* req = X509_REQ_new();
  X509_REQ_set_version(req, 0);
  addName(X509_REQ_get_subject_name(req), r.subject);
  X509_REQ_set_pubkey(req, k.get());
  std::string san;
  for (const auto& d : r.dnsNames) san += (san.empty() ? "" : ",") + ("DNS:" + d);
  for (const auto& i : r.ipAddresses) san += (san.empty() ? "" : ",") + ("IP:" + i);
  for (const auto& e : r.emails) san += (san.empty() ? "" : ",") + ("email:" + e);
  for (const auto& u : r.uris) san += (san.empty() ? "" : ",") + ("URI:" + u);
  if (!san.empty()) {
    STACK_OF(X509_EXTENSION)* exts = sk_X509_EXTENSION_new_null();
    sk_X509_EXTENSION_push(exts, X509V3_EXT_conf_nid(nullptr, nullptr, NID_subject_alt_name, san.c_str()));
    X509_REQ_add_extensions(req, exts);
    sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
  }
  X509_REQ_sign(req, k.get(), EVP_sha256());
  Bio b(BIO_new(BIO_s_mem()), BIO_free);
  PEM_write_bio_X509_REQ(b.get(), req);
  X509_REQ_free(req);
  return drain(b.get());
}

CertInfo inspect(const std::string& pem) {
  CertInfo info;
  info.pem = pem;
  Bio b(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  X509* x = PEM_read_bio_X509(b.get(), nullptr, nullptr, nullptr);
  if (!x) throw std::runtime_error("not a certificate: " + pem);
  info.subject = line(X509_get_subject_name(x));
  info.issuer = line(X509_get_issuer_name(x));
  info.notBefore = sysTime(X509_get0_notBefore(x));
  info.notAfter = sysTime(X509_get0_notAfter(x));
  uint32_t ku = X509_get_key_usage(x);
  const std::pair<uint32_t, const char*> kus[] = {{KU_DIGITAL_SIGNATURE, "Digital Signature"},
                                                  {KU_KEY_ENCIPHERMENT, "Key Encipherment"},
                                                  {KU_KEY_CERT_SIGN, "Certificate Sign"}};
  if (ku != UINT32_MAX)
    for (auto [bit, name] : kus)
      if (ku & bit) info.keyUsages.push_back(name);
  if (auto* eku = static_cast<EXTENDED_KEY_USAGE*>(X509_get_ext_d2i(x, NID_ext_key_usage, nullptr, nullptr))) {
    for (int i = 0; i < sk_ASN1_OBJECT_num(eku); ++i) {
      char buf[80];
      OBJ_obj2txt(buf, sizeof buf, sk_ASN1_OBJECT_value(eku, i), 0);
      info.extKeyUsages.push_back(buf);
    }
    sk_ASN1_OBJECT_pop_free(eku, ASN1_OBJECT_free);
  }
  if (auto* names = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(x, NID_subject_alt_name, nullptr, nullptr))) {
    for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
      const GENERAL_NAME* g = sk_GENERAL_NAME_value(names, i);
      Bio o(BIO_new(BIO_s_mem()), BIO_free);
      GENERAL_NAME_print(o.get(), const_cast<GENERAL_NAME*>(g));
      info.sans.push_back(drain(o.get()));
    }
    GENERAL_NAMES_free(names);
  }
  if (auto* bc = static_cast<BASIC_CONSTRAINTS*>(X509_get_ext_d2i(x, NID_basic_constraints, nullptr, nullptr))) {
    info.isCA = bc->ca != 0;
    BASIC_CONSTRAINTS_free(bc);
  }
  for (int i = 0; i < X509_get_ext_count(x); ++i) {
    X509_EXTENSION* e = X509_get_ext(x, i);
    int nid = OBJ_obj2nid(X509_EXTENSION_get_object(e));
    if (nid == NID_key_usage) info.keyUsageCritical = X509_EXTENSION_get_critical(e);
    if (nid == NID_basic_constraints) info.basicConstraintsCritical = X509_EXTENSION_get_critical(e);
  }
  if (const ASN1_OCTET_STRING* akid = X509_get0_authority_key_id(x)) {
    static const char kHex[] = "0123456789ABCDEF";
    for (int i = 0; i < ASN1_STRING_length(akid); ++i) {
      unsigned char c = ASN1_STRING_get0_data(akid)[i];
      info.authorityKeyId += kHex[c >> 4];
      info.authorityKeyId += kHex[c & 15];
    }
  }
  BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), nullptr);
  char* hex = BN_bn2hex(bn);
  info.serialHex = hex;
  OPENSSL_free(hex);
  BN_free(bn);
  X509_free(x);
  return info;
}

bool CertInfo::verifiesWith(const std::string& caPEM) const {
  Bio cb(BIO_new_mem_buf(caPEM.data(), static_cast<int>(caPEM.size())), BIO_free);
  X509* ca = PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr);
  Bio b(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  X509* x = PEM_read_bio_X509(b.get(), nullptr, nullptr, nullptr);
  bool ok = ca && x && X509_verify(x, X509_get0_pubkey(ca)) == 1;
  X509_free(ca);
  X509_free(x);
  return ok;
}

}  // namespace kcm::testing::pki
