// libFuzzer: arbitrary bytes as a cached CPU kernel's object file, through
// libzetile's own ELF loader (runtime/cpu/elf_load.c). The bytes come from a
// cache directory, so a damaged or foreign object must end in a status
// (the CPU backend then links with ORC), never in a read or write outside
// the input or the image: ASan and UBSan watch every input. An object that
// loads is released without running its code (mutated code is not code).
// Seeds: the objects of two real kernels (tests/fuzz/corpus/elf_object).
#include <stdint.h>
#include <string.h>

#include "cpu/elf_load.h"

static void stand_in(void) {}

// Every import resolves to a stand-in, except names starting with "zz"
// (the not-found path); libFuzzer mutates names into that form.
static void* resolve(const char* name, void* ctx) {
  (void)ctx;
  if (name[0] == 'z' && name[1] == 'z') return NULL;
  return (void*)(uintptr_t)&stand_in;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* const entries[] = {"zt_fuzz_seed", "zt_fuzz_seed2"};
  for (size_t i = 0; i < sizeof entries / sizeof entries[0]; ++i) {
    zt_elf_image_t* image = NULL;
    void* entry = NULL;
    zt_status_t s = zt_elf_image_load(data, size, entries[i], resolve, NULL, &image, &entry);
    if (s) {
      // A failed load leaves nothing behind.
      if (image || entry) __builtin_trap();
      zt_status_free(s);
      continue;
    }
    if (!image || !entry) __builtin_trap();
    zt_elf_image_release(image);
  }
  return 0;
}
