/* SPDX-License-Identifier: Apache-2.0 */
/* Cryptographic helpers for tokens and the stacks dictionary: SHA-256, random secrets,
 * constant-time comparison. libcrypto stays inside crypto.c. */
#ifndef ROOTTRACE_CRYPTO_H
#define ROOTTRACE_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32

/* 0 or -EIO. */
int sha256(const void *data, size_t len, uint8_t out[SHA256_LEN]);

/* A reusable SHA-256 state, so hashing many small inputs costs no allocation each. */
struct sha256_ctx;

/* NULL with errno set. */
struct sha256_ctx *sha256_ctx__new(void);
void sha256_ctx__free(struct sha256_ctx *c);

/* SHA-256 of data with c's state (0 or -EIO): the same digest as sha256(). */
int sha256_with(struct sha256_ctx *c, const void *data, size_t len, uint8_t out[SHA256_LEN]);

/* Fills buf with cryptographically random bytes; 0 or -EIO. */
int random_bytes(uint8_t *buf, size_t len);

/* Compares without an early exit, so the time taken says nothing about where they differ. */
bool equal_constant_time(const void *a, const void *b, size_t len);

#endif
