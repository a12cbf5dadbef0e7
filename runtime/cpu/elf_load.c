// See elf_load.h. Every field of the file is checked before it is used: the
// bytes come from a cache directory, and a damaged or foreign object must
// end in a status (the caller falls back to ORC), not in a wild write.
#include "cpu/elf_load.h"

#include <elf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct zt_elf_image_s {
  void* base;
  size_t size;
};

// Where each part of the image goes: code (and the import stubs)
// read-execute, constants read-only, writable data read-write, each part on
// pages of its own.
enum { PART_CODE, PART_CONST, PART_DATA, NUM_PARTS };

// An import reached by a call: `jmp *0(%rip)` then the 8-byte address, for
// a target farther than a 32-bit displacement reaches from the image.
#define STUB_SIZE 16

// Sections and symbols are read by copy: the object's bytes have no
// particular alignment.
typedef struct {
  const unsigned char* bytes;
  size_t size;
  Elf64_Ehdr eh;
  const char* shstr;  // section names (bounded by shstr_size)
  size_t shstr_size;
  Elf64_Shdr symtab;
  const char* str;    // symbol names
  size_t str_size;
  size_t num_syms;
  // Per section: its part and its offset in the image, or -1 if not loaded.
  int* part;
  size_t* offset;
  // Per symbol: its stub's index among the imports, or -1.
  long* stub;
  size_t num_stubs;
  size_t part_size[NUM_PARTS];
  size_t part_start[NUM_PARTS];
  unsigned char* image;
} elf_t;

static zt_status_t malformed(const char* what) {
  return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "not a usable object file: %s", what);
}

static bool in_file(const elf_t* e, uint64_t off, uint64_t len) {
  return off <= e->size && len <= e->size - off;
}

static void read_shdr(const elf_t* e, size_t i, Elf64_Shdr* out) {
  memcpy(out, e->bytes + e->eh.e_shoff + i * sizeof *out, sizeof *out);
}

static void read_sym(const elf_t* e, size_t i, Elf64_Sym* out) {
  memcpy(out, e->bytes + e->symtab.sh_offset + i * sizeof *out, sizeof *out);
}

// A NUL-terminated string at `off` of a string table, or NULL.
static const char* table_string(const char* table, size_t size, uint64_t off) {
  if (!table || off >= size) return NULL;
  return memchr(table + off, 0, size - off) ? table + off : NULL;
}

static zt_status_t read_headers(elf_t* e) {
  if (e->size < sizeof e->eh) return malformed("shorter than an ELF header");
  memcpy(&e->eh, e->bytes, sizeof e->eh);
  const unsigned char* id = e->eh.e_ident;
  if (memcmp(id, ELFMAG, SELFMAG) != 0) return malformed("no ELF magic");
  if (id[EI_CLASS] != ELFCLASS64 || id[EI_DATA] != ELFDATA2LSB || id[EI_VERSION] != EV_CURRENT)
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "not a 64-bit little-endian ELF file");
  if (e->eh.e_type != ET_REL || e->eh.e_machine != EM_X86_64)
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "not an x86-64 relocatable object");
  if (e->eh.e_shentsize != sizeof(Elf64_Shdr)) return malformed("section header size");
  // 0 sections or an index escape (SHN_XINDEX) would mean extended numbering.
  if (e->eh.e_shnum == 0 || e->eh.e_shstrndx >= e->eh.e_shnum)
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "extended section numbering");
  if (!in_file(e, e->eh.e_shoff, (uint64_t)e->eh.e_shnum * sizeof(Elf64_Shdr)))
    return malformed("section headers outside the file");
  size_t n = e->eh.e_shnum;
  bool have_symtab = false;
  for (size_t i = 0; i < n; ++i) {
    Elf64_Shdr sh;
    read_shdr(e, i, &sh);
    if (sh.sh_type != SHT_NOBITS && sh.sh_type != SHT_NULL && !in_file(e, sh.sh_offset, sh.sh_size))
      return malformed("a section outside the file");
    if (sh.sh_type == SHT_SYMTAB) {
      if (have_symtab) return zt_make_status(ZT_STATUS_UNSUPPORTED, "two symbol tables");
      have_symtab = true;
      e->symtab = sh;
    }
  }
  Elf64_Shdr names;
  read_shdr(e, e->eh.e_shstrndx, &names);
  if (names.sh_type != SHT_STRTAB) return malformed("section names");
  e->shstr = (const char*)e->bytes + names.sh_offset;
  e->shstr_size = names.sh_size;
  if (!have_symtab) return malformed("no symbol table");
  if (e->symtab.sh_entsize != sizeof(Elf64_Sym) || e->symtab.sh_size % sizeof(Elf64_Sym))
    return malformed("symbol table entry size");
  e->num_syms = e->symtab.sh_size / sizeof(Elf64_Sym);
  if (e->symtab.sh_link >= n) return malformed("symbol names");
  Elf64_Shdr str;
  read_shdr(e, e->symtab.sh_link, &str);
  if (str.sh_type != SHT_STRTAB) return malformed("symbol names");
  e->str = (const char*)e->bytes + str.sh_offset;
  e->str_size = str.sh_size;
  return NULL;
}

static size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

// Chooses each allocated section's part and offset; refuses sections whose
// meaning goes beyond bytes at an address (TLS, constructors, ...).
static zt_status_t place_sections(elf_t* e) {
  size_t n = e->eh.e_shnum;
  for (size_t i = 0; i < n; ++i) {
    e->part[i] = -1;
    Elf64_Shdr sh;
    read_shdr(e, i, &sh);
    const char* name = table_string(e->shstr, e->shstr_size, sh.sh_name);
    if (!name) return malformed("a section name");
    if (sh.sh_type == SHT_REL)
      return zt_make_status(ZT_STATUS_UNSUPPORTED, "relocations without addends (%s)", name);
    if (!(sh.sh_flags & SHF_ALLOC)) continue;  // symbols, names, notes, debug info
    if (sh.sh_type != SHT_PROGBITS && sh.sh_type != SHT_NOBITS &&
        sh.sh_type != SHT_X86_64_UNWIND)
      return zt_make_status(ZT_STATUS_UNSUPPORTED, "section %s of type %u", name,
                            (unsigned)sh.sh_type);
    if (sh.sh_flags & SHF_TLS)
      return zt_make_status(ZT_STATUS_UNSUPPORTED, "thread-local section %s", name);
    bool exec = sh.sh_flags & SHF_EXECINSTR, write = sh.sh_flags & SHF_WRITE;
    if (exec && write)
      return zt_make_status(ZT_STATUS_UNSUPPORTED, "writable code section %s", name);
    uint64_t align = sh.sh_addralign ? sh.sh_addralign : 1;
    if (align & (align - 1) || align > 4096)
      return zt_make_status(ZT_STATUS_UNSUPPORTED, "section %s aligned to %llu", name,
                            (unsigned long long)align);
    if (sh.sh_size > ((size_t)1 << 30))
      return zt_make_status(ZT_STATUS_UNSUPPORTED, "section %s of %llu bytes", name,
                            (unsigned long long)sh.sh_size);
    int p = exec ? PART_CODE : write ? PART_DATA : PART_CONST;
    size_t at = align_up(e->part_size[p], (size_t)align);
    e->part[i] = p;
    e->offset[i] = at;
    e->part_size[p] = at + (size_t)sh.sh_size;
  }
  return NULL;
}

static bool reloc_section(const elf_t* e, const Elf64_Shdr* sh, Elf64_Shdr* target) {
  if (sh->sh_type != SHT_RELA) return false;
  if (sh->sh_info >= e->eh.e_shnum || e->part[sh->sh_info] < 0) return false;  // e.g. debug info
  read_shdr(e, sh->sh_info, target);
  return true;
}

// Checks every relocation's type, symbol and place, and gives each import
// that a relocation names a stub.
static zt_status_t scan_relocations(elf_t* e) {
  size_t n = e->eh.e_shnum;
  for (size_t i = 0; i < e->num_syms; ++i) e->stub[i] = -1;
  for (size_t i = 0; i < n; ++i) {
    Elf64_Shdr sh, target;
    read_shdr(e, i, &sh);
    if (!reloc_section(e, &sh, &target)) continue;
    if (sh.sh_entsize != sizeof(Elf64_Rela) || sh.sh_size % sizeof(Elf64_Rela))
      return malformed("relocation entry size");
    if (sh.sh_link >= n) return malformed("relocations' symbol table");
    Elf64_Shdr linked;
    read_shdr(e, sh.sh_link, &linked);
    if (linked.sh_type != SHT_SYMTAB || linked.sh_offset != e->symtab.sh_offset)
      return malformed("relocations' symbol table");
    if (target.sh_type == SHT_NOBITS) return malformed("relocations in a section without bytes");
    size_t count = sh.sh_size / sizeof(Elf64_Rela);
    for (size_t r = 0; r < count; ++r) {
      Elf64_Rela rel;
      memcpy(&rel, e->bytes + sh.sh_offset + r * sizeof rel, sizeof rel);
      uint32_t type = ELF64_R_TYPE(rel.r_info);
      uint64_t sym = ELF64_R_SYM(rel.r_info);
      if (type == R_X86_64_NONE) continue;
      if (type != R_X86_64_PC32 && type != R_X86_64_PLT32)
        return zt_make_status(ZT_STATUS_UNSUPPORTED, "relocation type %u", (unsigned)type);
      if (rel.r_offset > target.sh_size || target.sh_size - rel.r_offset < 4)
        return malformed("a relocation outside its section");
      if (sym == 0 || sym >= e->num_syms) return malformed("a relocation's symbol");
      Elf64_Sym s;
      read_sym(e, (size_t)sym, &s);
      if (s.st_shndx == SHN_UNDEF) {
        if (e->stub[sym] < 0) e->stub[sym] = (long)e->num_stubs++;
      } else if (s.st_shndx == SHN_COMMON || (s.st_shndx >= SHN_LORESERVE && s.st_shndx != SHN_ABS)) {
        return zt_make_status(ZT_STATUS_UNSUPPORTED, "a symbol in special section %u",
                              (unsigned)s.st_shndx);
      } else if (s.st_shndx != SHN_ABS) {
        if (s.st_shndx >= n || e->part[s.st_shndx] < 0)
          return malformed("a relocation against a section that is not loaded");
      }
    }
  }
  return NULL;
}

// The address a defined symbol has in the image (absolute ones: their value).
static bool symbol_address(const elf_t* e, const Elf64_Sym* s, uint64_t* out) {
  if (s->st_shndx == SHN_ABS) {
    *out = s->st_value;
    return true;
  }
  if (s->st_shndx >= e->eh.e_shnum || e->part[s->st_shndx] < 0) return false;
  Elf64_Shdr sh;
  read_shdr(e, s->st_shndx, &sh);
  if (s->st_value > sh.sh_size) return false;
  *out = (uint64_t)(uintptr_t)e->image + e->part_start[e->part[s->st_shndx]] +
         e->offset[s->st_shndx] + s->st_value;
  return true;
}

static bool fits_pc32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

static zt_status_t apply_relocations(elf_t* e, zt_elf_resolve_fn resolve, void* ctx) {
  size_t n = e->eh.e_shnum;
  // Imports first: each stub jumps to its resolved address.
  unsigned char* stubs = e->image + e->part_start[PART_CODE] +
                         align_up(e->part_size[PART_CODE], STUB_SIZE);
  uint64_t* resolved = calloc(e->num_stubs ? e->num_stubs : 1, sizeof *resolved);
  if (!resolved) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "object imports");
  zt_status_t s = NULL;
  for (size_t i = 0; i < e->num_syms && !s; ++i) {
    if (e->stub[i] < 0) continue;
    Elf64_Sym sym;
    read_sym(e, i, &sym);
    const char* name = table_string(e->str, e->str_size, sym.st_name);
    if (!name || !*name) {
      s = malformed("an import's name");
      break;
    }
    void* addr = resolve ? resolve(name, ctx) : NULL;
    if (!addr) {
      s = zt_make_status(ZT_STATUS_NOT_FOUND, "the object imports '%s', not found here", name);
      break;
    }
    resolved[e->stub[i]] = (uint64_t)(uintptr_t)addr;
    unsigned char* stub = stubs + (size_t)e->stub[i] * STUB_SIZE;
    static const unsigned char jmp[6] = {0xff, 0x25, 0, 0, 0, 0};  // jmp *0(%rip)
    memcpy(stub, jmp, sizeof jmp);
    memcpy(stub + 6, &resolved[e->stub[i]], 8);
    memset(stub + 14, 0xcc, STUB_SIZE - 14);  // int3
  }
  for (size_t i = 0; i < n && !s; ++i) {
    Elf64_Shdr sh, target;
    read_shdr(e, i, &sh);
    if (!reloc_section(e, &sh, &target)) continue;
    unsigned char* base = e->image + e->part_start[e->part[sh.sh_info]] + e->offset[sh.sh_info];
    size_t count = sh.sh_size / sizeof(Elf64_Rela);
    for (size_t r = 0; r < count && !s; ++r) {
      Elf64_Rela rel;
      memcpy(&rel, e->bytes + sh.sh_offset + r * sizeof rel, sizeof rel);
      uint32_t type = ELF64_R_TYPE(rel.r_info);
      if (type == R_X86_64_NONE) continue;
      size_t si = (size_t)ELF64_R_SYM(rel.r_info);
      Elf64_Sym sym;
      read_sym(e, si, &sym);
      uint64_t place = (uint64_t)(uintptr_t)base + rel.r_offset;
      uint64_t target_addr;
      int64_t v;
      if (e->stub[si] >= 0) {
        // An import: direct if in reach, else a call through its stub (a
        // PC32 data reference cannot go through a stub).
        target_addr = resolved[e->stub[si]];
        v = (int64_t)(target_addr + (uint64_t)rel.r_addend - place);
        if (!fits_pc32(v) && type == R_X86_64_PLT32) {
          target_addr = (uint64_t)(uintptr_t)(stubs + (size_t)e->stub[si] * STUB_SIZE);
          v = (int64_t)(target_addr + (uint64_t)rel.r_addend - place);
        }
      } else {
        if (!symbol_address(e, &sym, &target_addr)) {
          s = malformed("a relocation's symbol");
          break;
        }
        v = (int64_t)(target_addr + (uint64_t)rel.r_addend - place);
      }
      if (!fits_pc32(v)) {
        s = zt_make_status(ZT_STATUS_UNSUPPORTED,
                           "a 32-bit PC-relative relocation out of reach (%lld bytes)",
                           (long long)v);
        break;
      }
      int32_t v32 = (int32_t)v;
      memcpy(base + rel.r_offset, &v32, 4);
    }
  }
  free(resolved);
  return s;
}

static zt_status_t find_entry(const elf_t* e, const char* entry, void** out) {
  for (size_t i = 1; i < e->num_syms; ++i) {
    Elf64_Sym s;
    read_sym(e, i, &s);
    if (ELF64_ST_BIND(s.st_info) == STB_LOCAL || s.st_shndx == SHN_UNDEF) continue;
    const char* name = table_string(e->str, e->str_size, s.st_name);
    if (!name || strcmp(name, entry) != 0) continue;
    uint64_t addr;
    if (s.st_shndx >= SHN_LORESERVE || !symbol_address(e, &s, &addr) ||
        e->part[s.st_shndx] != PART_CODE)
      return malformed("the entry point is not in a code section");
    *out = (void*)(uintptr_t)addr;
    return NULL;
  }
  return zt_make_status(ZT_STATUS_NOT_FOUND, "the object defines no function '%s'", entry);
}

static zt_status_t load(elf_t* e, const char* entry, zt_elf_resolve_fn resolve, void* ctx,
                        zt_elf_image_t** out_image, void** out_entry) {
  ZT_RETURN_IF_ERROR(read_headers(e));
  size_t n = e->eh.e_shnum;
  e->part = calloc(n, sizeof *e->part);
  e->offset = calloc(n, sizeof *e->offset);
  e->stub = calloc(e->num_syms ? e->num_syms : 1, sizeof *e->stub);
  if (!e->part || !e->offset || !e->stub)
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "object sections");
  ZT_RETURN_IF_ERROR(place_sections(e));
  ZT_RETURN_IF_ERROR(scan_relocations(e));
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t code = align_up(e->part_size[PART_CODE], STUB_SIZE) + e->num_stubs * STUB_SIZE;
  size_t sizes[NUM_PARTS] = {code, e->part_size[PART_CONST], e->part_size[PART_DATA]};
  size_t total = 0;
  for (int p = 0; p < NUM_PARTS; ++p) {
    e->part_start[p] = total;
    total += align_up(sizes[p], page);
  }
  if (total == 0) return malformed("nothing to load");
  // Kernels are kilobytes; a size field claiming more is damage, and a
  // bounded image keeps every part in 32-bit reach of every other.
  if (total > ((size_t)256 << 20))
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "an image of %zu bytes", total);
  // One mapping, so that the parts reach each other with 32-bit offsets.
  void* mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "mapping %zu bytes", total);
  e->image = mem;
  zt_elf_image_t* img = malloc(sizeof *img);
  if (!img) {
    munmap(mem, total);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "object image");
  }
  img->base = mem;
  img->size = total;
  for (size_t i = 0; i < n; ++i) {
    if (e->part[i] < 0) continue;
    Elf64_Shdr sh;
    read_shdr(e, i, &sh);
    if (sh.sh_type == SHT_NOBITS) continue;  // the mapping is zeroed
    memcpy(e->image + e->part_start[e->part[i]] + e->offset[i], e->bytes + sh.sh_offset,
           (size_t)sh.sh_size);
  }
  zt_status_t s = apply_relocations(e, resolve, ctx);
  if (!s) s = find_entry(e, entry, out_entry);
  // W^X: code becomes read-execute and constants read-only only now that
  // every write is done; data stays read-write.
  if (!s && sizes[PART_CODE] &&
      mprotect(e->image + e->part_start[PART_CODE], align_up(sizes[PART_CODE], page),
               PROT_READ | PROT_EXEC) != 0)
    s = zt_make_status(ZT_STATUS_UNAVAILABLE, "mprotect of the kernel's code failed");
  if (!s && sizes[PART_CONST] &&
      mprotect(e->image + e->part_start[PART_CONST], align_up(sizes[PART_CONST], page),
               PROT_READ) != 0)
    s = zt_make_status(ZT_STATUS_UNAVAILABLE, "mprotect of the kernel's constants failed");
  if (s) {
    zt_elf_image_release(img);
    *out_entry = NULL;
    return s;
  }
  *out_image = img;
  return NULL;
}

zt_status_t zt_elf_image_load(const void* obj, size_t size, const char* entry,
                              zt_elf_resolve_fn resolve, void* ctx,
                              zt_elf_image_t** out_image, void** out_entry) {
  if (!out_image || !out_entry)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "elf load: NULL output");
  *out_image = NULL;
  *out_entry = NULL;
  if (!obj || !entry) return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "elf load: NULL argument");
  elf_t e;
  memset(&e, 0, sizeof e);
  e.bytes = obj;
  e.size = size;
  zt_status_t s = load(&e, entry, resolve, ctx, out_image, out_entry);
  free(e.part);
  free(e.offset);
  free(e.stub);
  return s;
}

void zt_elf_image_release(zt_elf_image_t* image) {
  if (!image) return;
  munmap(image->base, image->size);
  free(image);
}
