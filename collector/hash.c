// SPDX-License-Identifier: Apache-2.0
/* SHA-256, random bytes and constant-time comparison on OpenSSL's libcrypto.
 * The only collector file that includes OpenSSL headers. */
#include <errno.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "hash.h"

int sha256(const void *data, size_t len, uint8_t out[SHA256_LEN])
{
	unsigned int out_len = 0;

	if (!EVP_Digest(data, len, out, &out_len, EVP_sha256(), NULL) || out_len != SHA256_LEN)
		return -EIO;
	return 0;
}

int random_bytes(uint8_t *buf, size_t len)
{
	return RAND_bytes(buf, (int)len) == 1 ? 0 : -EIO;
}

bool equal_constant_time(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) == 0;
}
