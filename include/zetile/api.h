// zetile: export macro and version numbers shared by every public header.
#ifndef ZETILE_API_H_
#define ZETILE_API_H_

#if defined(ZT_BUILDING_LIBRARY)
#define ZT_API __attribute__((visibility("default")))
#else
#define ZT_API
#endif

// The one place zetile's version is written: CMake (project version,
// zetileConfigVersion.cmake, zetile.pc) and pyproject.toml read
// ZT_VERSION_STRING from this file; zetile.__version__ and zt_version() give
// it at run time, and the compile cache keys on it. The three numbers must
// agree with the string (tests/c/test_version.c checks).
#define ZT_VERSION_MAJOR 0
#define ZT_VERSION_MINOR 1
#define ZT_VERSION_PATCH 0
#define ZT_VERSION_STRING "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif
/// The version of the libzetile that is loaded (may differ from the header's
/// ZT_VERSION_STRING when a program runs against a newer library). Static
/// storage; thread-safe.
ZT_API const char* zt_version(void);
#ifdef __cplusplus
}
#endif

#endif  // ZETILE_API_H_
