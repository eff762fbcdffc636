/* hash.c: thin wrapper over OpenSSL's EVP SHA-256. */
#include "hash.h"

#include <openssl/evp.h>
#include <string.h>

struct hash_ctx { EVP_MD_CTX *md; };

hash_ctx *hash_begin(void) {
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  if (!md) return NULL;
  if (EVP_DigestInit_ex(md, EVP_sha256(), NULL) != 1) { EVP_MD_CTX_free(md); return NULL; }
  return (hash_ctx *)md; /* the handle is the EVP context itself */
}

void hash_add(hash_ctx *h, const void *data, size_t n) {
  if (h && n) EVP_DigestUpdate((EVP_MD_CTX *)h, data, n);
}

void hash_add_str(hash_ctx *h, const char *s) { hash_add(h, s ? s : "", strlen(s ? s : "") + 1); }

void hash_end(hash_ctx *h, unsigned char out[32]) {
  unsigned int len = 32;
  if (!h) { memset(out, 0, 32); return; }
  EVP_DigestFinal_ex((EVP_MD_CTX *)h, out, &len);
  EVP_MD_CTX_free((EVP_MD_CTX *)h);
}

void hash_sha256(const void *data, size_t n, unsigned char out[32]) {
  hash_ctx *h = hash_begin();
  hash_add(h, data, n);
  hash_end(h, out);
}

void hash_hex(const unsigned char d[32], char out[65]) {
  static const char hx[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) { out[2 * i] = hx[d[i] >> 4]; out[2 * i + 1] = hx[d[i] & 15]; }
  out[64] = 0;
}
