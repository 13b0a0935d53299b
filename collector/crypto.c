// SPDX-License-Identifier: Apache-2.0
/* SHA-256, random bytes, constant-time comparison and base64 decoding on OpenSSL's libcrypto.
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

int base64_decode(const char *text, uint8_t *out, size_t out_len, size_t *ret_len)
{
	size_t len = strlen(text), pad = 0;
	int n;

	if (!len || len % 4 || len / 4 * 3 > out_len)
		return -EINVAL;
	/* EVP_DecodeBlock counts padding as zero bytes and accepts '=' anywhere: check both. */
	while (pad < 2 && text[len - 1 - pad] == '=')
		pad++;
	if (memchr(text, '=', len - pad))
		return -EINVAL;
	n = EVP_DecodeBlock(out, (const unsigned char *)text, (int)len);
	if (n < 0 || (size_t)n != len / 4 * 3)
		return -EINVAL;
	*ret_len = (size_t)n - pad;
	return 0;
}
