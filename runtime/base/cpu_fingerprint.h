// What identifies the host CPU to code generation, read without LLVM.
//
// Why: a CPU artifact's machine code is tied to the CPU it was generated for
// (LLVM's host CPU name and features, the artifact's "obj_host"). The
// compiler computes those with LLVM; libzetile's own object loader
// (runtime/cpu/elf_load.c) must decide whether the code may run here
// without loading LLVM. Both libraries append this fingerprint to
// "obj_host", so the loader compares it alone.
#ifndef ZETILE_RUNTIME_BASE_CPU_FINGERPRINT_H_
#define ZETILE_RUNTIME_BASE_CPU_FINGERPRINT_H_

/// "cpuid=<16 hex digits>": a hash of the CPUID leaves and the XCR0 bits
/// that LLVM's host CPU name and features are derived from (vendor, family
/// and model, every feature leaf; not the per-core APIC ids). The same on
/// every core of a machine. "" on hosts other than x86-64. Static storage,
/// computed once; thread-safe.
const char* zt_cpu_fingerprint(void);

#endif  // ZETILE_RUNTIME_BASE_CPU_FINGERPRINT_H_
