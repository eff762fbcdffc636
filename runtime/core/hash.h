/* hash.h: SHA-256 (OpenSSL libcrypto) for cache keys and manifest identity. */
#ifndef WEFT_HASH_H
#define WEFT_HASH_H
#include <stddef.h>

typedef struct hash_ctx hash_ctx;

hash_ctx *hash_begin(void);                                  /* NULL on allocation failure */
void hash_add(hash_ctx *h, const void *data, size_t n);
void hash_add_str(hash_ctx *h, const char *s);               /* adds s and its terminating 0 */
void hash_end(hash_ctx *h, unsigned char out[32]);          /* frees h */
void hash_sha256(const void *data, size_t n, unsigned char out[32]);
void hash_hex(const unsigned char digest[32], char out[65]);

#endif
