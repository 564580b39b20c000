/* Memory kept for reuse instead of freed (pooled buffers), marked for
 * AddressSanitizer: poisoned while parked, so a use after its owner let
 * it go is still caught; a no-op in other builds. */
#ifndef SNFS_UTIL_POISON_H
#define SNFS_UTIL_POISON_H

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define MEM_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define MEM_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define MEM_POISON(p, n) ((void)(p), (void)(n))
#define MEM_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#endif
