/*
 * sha256.h - SHA-256 (FIPS 180-4), for fingerprints of installed agents.
 *
 * No library lev links offers a hash, so this is a small plain
 * implementation; it is not constant-time and holds no secrets.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define LEV_SHA256_LEN 32
#define LEV_SHA256_HEX_LEN (2 * LEV_SHA256_LEN)

struct lev_sha256 {
	uint32_t h[8];
	uint64_t len;		/* bytes hashed so far */
	uint8_t buf[64];
	size_t n;		/* bytes in buf */
};

void lev_sha256_init(struct lev_sha256 *c);
void lev_sha256_update(struct lev_sha256 *c, const void *data, size_t len);
void lev_sha256_final(struct lev_sha256 *c, uint8_t out[LEV_SHA256_LEN]);

/* Lower-case hex of DIGEST into OUT (LEV_SHA256_HEX_LEN + 1 bytes). */
void lev_sha256_hex(const uint8_t digest[LEV_SHA256_LEN], char out[LEV_SHA256_HEX_LEN + 1]);
