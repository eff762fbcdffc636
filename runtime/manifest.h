/* manifest.h: building and freeing weft_manifest (see weft.h), filled from the generator. */
#ifndef WEFT_MANIFEST_H
#define WEFT_MANIFEST_H
#include "weft.h"

weft_manifest *manifest_new(void);
/* A copy of s owned by m (NULL for NULL); NULL on allocation failure. */
const char *manifest_str(weft_manifest *m, const char *s);
void *manifest_alloc(weft_manifest *m, size_t size);  /* zeroed, owned by m */
/* hash = sha-256 over source and options */
void manifest_seal(weft_manifest *m);
/* index of the argument named name, or -1 */
int manifest_arg_index(const weft_manifest *m, const char *name);

#endif
