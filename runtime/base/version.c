// zt_version(): the library's own version, for programs built against
// another header (the header's ZT_VERSION_STRING is the build-time one).
#include "zetile/api.h"

const char* zt_version(void) { return ZT_VERSION_STRING; }
