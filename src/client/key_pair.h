#pragma once
// Whether a private key belongs to a certificate, as Go's tls.X509KeyPair decides it: by the key's own private
// part. OpenSSL's X509_check_private_key compares only the public half a key file carries (an EC key file embeds
// its public point, an RSA one its modulus), so a file whose private scalar or CRT values were damaged passes it
// and then signs what nothing verifies. Here a fixed message is signed with the key and verified with the
// certificate's public key.
#include <openssl/evp.h>

namespace kcm::client {

bool privateKeyMatches(EVP_PKEY* key, EVP_PKEY* certPublicKey);

}  // namespace kcm::client
