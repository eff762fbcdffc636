/* internal.h: what the CLI needs from the library beyond weft.h. */
#ifndef WEFT_INTERNAL_H
#define WEFT_INTERNAL_H
#include "bridge.h"
#include "weft.h"

bridge *api_bridge(weft_ctx *c);
/* The device weft launches on (initialises it): name, sm (e.g. 90), driver version. */
weft_status api_device_info(weft_ctx *c, char *name, size_t len, int *sm, int *driver);

#endif
