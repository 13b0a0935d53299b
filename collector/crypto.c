// SPDX-License-Identifier: Apache-2.0
/* SHA-256, random bytes and constant-time comparison on OpenSSL's libcrypto.
 * The only collector file that includes OpenSSL headers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "crypto.h"

int sha256(const void *data, size_t len, uint8_t out[SHA256_LEN])
{
	unsigned int out_len = 0;

	if (!EVP_Digest(data, len, out, &out_len, EVP_sha256(), NULL) || out_len != SHA256_LEN)
		return -EIO;
	return 0;
}

struct sha256_ctx {
	EVP_MD_CTX *md_ctx;
	EVP_MD *md; /* fetched once: EVP_sha256() looks the provider up on every init */
};

struct sha256_ctx *sha256_ctx__new(void)
{
	struct sha256_ctx *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->md_ctx = EVP_MD_CTX_new();
	c->md = EVP_MD_fetch(NULL, "SHA256", NULL);
	if (!c->md_ctx || !c->md) {
		sha256_ctx__free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

void sha256_ctx__free(struct sha256_ctx *c)
{
	if (!c)
		return;
	EVP_MD_CTX_free(c->md_ctx);
	EVP_MD_free(c->md);
	free(c);
}

int sha256_with(struct sha256_ctx *c, const void *data, size_t len, uint8_t out[SHA256_LEN])
{
	unsigned int out_len = 0;

	if (!EVP_DigestInit_ex2(c->md_ctx, c->md, NULL) ||
	    !EVP_DigestUpdate(c->md_ctx, data, len) ||
	    !EVP_DigestFinal_ex(c->md_ctx, out, &out_len) || out_len != SHA256_LEN)
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
