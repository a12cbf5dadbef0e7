// zetile: umbrella header.
#ifndef ZETILE_ZETILE_H_
#define ZETILE_ZETILE_H_

#include "zetile/api.h"
#include "zetile/status.h"
#include "zetile/builder.h"
#include "zetile/compiler.h"
#include "zetile/cache.h"
#include "zetile/runtime.h"

#endif  // ZETILE_ZETILE_H_
