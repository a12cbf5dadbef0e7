// zetile: export macro and version numbers shared by every public header.
#ifndef ZETILE_API_H_
#define ZETILE_API_H_

#if defined(ZT_BUILDING_LIBRARY)
#define ZT_API __attribute__((visibility("default")))
#else
#define ZT_API
#endif

#define ZT_VERSION_MAJOR 0
#define ZT_VERSION_MINOR 1
#define ZT_VERSION_PATCH 0
#define ZT_VERSION_STRING "0.1.0"

#endif  // ZETILE_API_H_
