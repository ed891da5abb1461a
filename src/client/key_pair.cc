#include "client/key_pair.h"

#include <openssl/err.h>
#include <openssl/x509.h>

#include <memory>
#include <vector>

namespace kcm::client {

bool privateKeyMatches(EVP_PKEY* key, EVP_PKEY* certPublicKey) {
  if (!key || !certPublicKey) return false;
  // The cheap public-half comparison first (also rejects keys of another type or curve).
  if (EVP_PKEY_eq(key, certPublicKey) != 1) {
    ERR_clear_error();
    return false;
  }
  static const unsigned char kMessage[] = "kube-controller-manager key pair check";
  // Ed25519 and Ed448 sign the message itself (no digest); RSA and ECDSA sign its SHA-256.
  const int id = EVP_PKEY_base_id(key);
  const EVP_MD* md = id == EVP_PKEY_ED25519 || id == EVP_PKEY_ED448 ? nullptr : EVP_sha256();
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> sctx(EVP_MD_CTX_new(), EVP_MD_CTX_free),
      vctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  size_t len = 0;
  bool ok = sctx && vctx && EVP_DigestSignInit(sctx.get(), nullptr, md, nullptr, key) == 1 &&
            EVP_DigestSign(sctx.get(), nullptr, &len, kMessage, sizeof kMessage) == 1;
  std::vector<unsigned char> sig(len);
  ok = ok && EVP_DigestSign(sctx.get(), sig.data(), &len, kMessage, sizeof kMessage) == 1 &&
       EVP_DigestVerifyInit(vctx.get(), nullptr, md, nullptr, certPublicKey) == 1 &&
       EVP_DigestVerify(vctx.get(), sig.data(), len, kMessage, sizeof kMessage) == 1;
  ERR_clear_error();
  return ok;
}

}  // namespace kcm::client
