/* api_export.c: libweft.so's own translation unit; the API itself lives in weft_core. */
#include "weft.h"
const char *weft_version(void) { return WEFT_VERSION; }
