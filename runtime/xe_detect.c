// Device -> target row (see xe_detect.h). The PCI ids are ranges spanning
// each family's ids in Linux's include/drm/intel/pciids.h (the Arrow Lake
// ones checked against it here, the others written from that list by
// family; an id missing here still gets a row by its properties); the
// IP versions are the ones Debian's ocloc prints for its device names
// (`ocloc ids tgllp` -> 12.0.0) plus Intel's published ones for parts it
// does not know (mtl 12.70/12.71, arl-h 12.74, bmg 20.1, lnl 20.4, ptl 30).
#include "xe_detect.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "xe/xe_target.h"

typedef struct id_range_s {
  uint16_t first, last;
  const char* row;
  const char* product;
} id_range_t;

// Ranges of one family each; a family's rows share ISA and features, so a
// row stands for its siblings (kbl/cfl/cml under skl, adl-n under adl-p,
// Raptor Lake under Alder Lake, Arrow Lake-S/U under mtl).
static const id_range_t k_ids[] = {
    {0x1902, 0x193d, "skl", "Skylake (Gen9)"},
    {0x5902, 0x593b, "skl", "Kaby Lake (Gen9)"},
    {0x87c0, 0x87ca, "skl", "Amber/Comet Lake (Gen9)"},
    {0x3e90, 0x3ea9, "skl", "Coffee/Whiskey Lake (Gen9)"},
    {0x9b21, 0x9bf6, "skl", "Comet Lake (Gen9)"},
    {0x5a84, 0x5a85, "skl", "Apollo Lake (Gen9)"},
    {0x3184, 0x3185, "skl", "Gemini Lake (Gen9)"},
    {0x8a50, 0x8a71, "icllp", "Ice Lake (Gen11)"},
    {0x4e51, 0x4e71, "icllp", "Elkhart/Jasper Lake (Gen11)"},
    {0xff05, 0xff05, "icllp", "Ice Lake (Gen11; NEO's simulated id)"},
    {0x9a40, 0x9af8, "tgllp", "Tiger Lake (Gen12LP)"},
    {0xff20, 0xff20, "tgllp", "Tiger Lake (Gen12LP; NEO's simulated id, as ocloc maps it)"},
    {0x4c80, 0x4c9a, "rkl", "Rocket Lake (Gen12LP)"},
    {0x4680, 0x4693, "adl-s", "Alder Lake-S (Gen12LP)"},
    {0xa780, 0xa78b, "adl-s", "Raptor Lake-S (Gen12LP)"},
    {0x4626, 0x46c3, "adl-p", "Alder Lake-P (Gen12LP)"},
    {0x46d0, 0x46d4, "adl-p", "Alder Lake-N (Gen12LP)"},
    {0xa720, 0xa7ad, "adl-p", "Raptor Lake-P/U (Gen12LP)"},
    {0x4905, 0x4909, "dg1", "DG1, Iris Xe MAX (Gen12LP)"},
    {0x4f80, 0x4f88, "dg2", "Arc A-series (Xe-HPG)"},
    {0x5690, 0x56c2, "dg2", "Arc A-series / Flex (Xe-HPG)"},
    {0x7d51, 0x7d51, "arl-h", "Arrow Lake-H (Xe-LPG+)"},
    {0x7dd1, 0x7dd1, "arl-h", "Arrow Lake-H (Xe-LPG+)"},
    {0x7d40, 0x7d67, "mtl", "Meteor Lake / Arrow Lake-S,U (Xe-LPG)"},
    {0x7dd5, 0x7dd5, "mtl", "Meteor Lake (Xe-LPG)"},
    {0xb640, 0xb640, "mtl", "Arrow Lake-S (Xe-LPG)"},
    {0x0bd0, 0x0bdb, "pvc", "Data Center GPU Max (Xe-HPC)"},
    {0x0b69, 0x0b69, "pvc", "Data Center GPU Max (Xe-HPC)"},
    {0x0b6e, 0x0b6e, "pvc", "Data Center GPU Max (Xe-HPC)"},
    {0xe200, 0xe21f, "bmg", "Arc B-series (Xe2-HPG)"},
    {0x6420, 0x64b0, "lnl", "Lunar Lake (Xe2-LPG)"},
    {0xb080, 0xb0b0, "ptl", "Panther Lake (Xe3-LPG)"},
};

typedef struct ip_row_s {
  int major, minor_first, minor_last;
  const char* row;
} ip_row_t;

static const ip_row_t k_ips[] = {
    {9, 0, 255, "skl"},    {11, 0, 255, "icllp"}, {12, 0, 0, "tgllp"},  {12, 1, 1, "rkl"},
    {12, 2, 2, "adl-s"},   {12, 3, 4, "adl-p"},   {12, 10, 10, "dg1"},  {12, 55, 59, "dg2"},
    {12, 60, 61, "pvc"},   {12, 70, 71, "mtl"},   {12, 74, 74, "arl-h"}, {20, 1, 2, "bmg"},
    {20, 4, 4, "lnl"},     {30, 0, 255, "ptl"},
};

static bool offers(const zt_xe_props_t* p, int size) {
  for (int i = 0; i < 8 && p->subgroup_sizes[i]; ++i)
    if (p->subgroup_sizes[i] == size) return true;
  return false;
}

// The first row (table order: the oldest, most widely served part of each
// kind first) with a lowering that runs at a subgroup size the device
// offers and whose XMX and DP4A match what it reports; unreported features
// count as absent, because code for a row without them (FMA dots, no DP4A)
// is correct on hardware that has them, and not the other way round. pvc is
// chosen only by id, IP version or name: an unknown GPU is a newer or a
// client part, not a Data Center GPU Max.
static const xe_target_t* closest(const zt_xe_props_t* p) {
  bool xmx = p->xmx == 1, dp4a = p->dp4a == 1;
  for (int i = 0; i < xe_target_count(); ++i) {
    const xe_target_t* t = xe_target_at(i);
    if (t->lowering == XE_LOWERING_NONE || strcmp(t->name, "pvc") == 0) continue;
    // Xe2 dropped SIMD8: a GPU that offers it predates Xe2 and takes a
    // SIMD8 row (the XeVM rows are SIMD16 parts that lack it).
    bool simd8 = offers(p, 8);
    if ((simd8 ? t->subgroup_size != 8 : !offers(p, t->subgroup_size)) ||
        xe_target_has_xmx(t) != xmx || t->dp4a != dp4a)
      continue;
    return t;
  }
  return NULL;
}

static void describe(const zt_xe_props_t* p, char* out, size_t cap) {
  int n = snprintf(out, cap, "subgroup sizes");
  if (!p->subgroup_sizes[0]) n += snprintf(out + n, cap > (size_t)n ? cap - n : 0, " unknown");
  for (int i = 0; i < 8 && p->subgroup_sizes[i] && (size_t)n < cap; ++i)
    n += snprintf(out + n, cap - n, "%s%d", i ? "/" : " ", p->subgroup_sizes[i]);
  if ((size_t)n < cap)
    snprintf(out + n, cap - n, ", XMX %s, DP4A %s",
             p->xmx < 0 ? "not reported" : p->xmx ? "yes" : "no",
             p->dp4a < 0 ? "not reported" : p->dp4a ? "yes" : "no");
}

const char* zt_xe_detect(const zt_xe_props_t* p, char* why, size_t why_cap) {
  char dummy[8];
  if (!why || !why_cap) {
    why = dummy;
    why_cap = sizeof dummy;
  }
  if (p->simulated && p->simulated[0]) {
    // NEO's product names where they differ from the rows'.
    static const struct {
      const char *neo, *row;
    } aliases[] = {{"adls", "adl-s"}, {"adlp", "adl-p"}, {"adln", "adl-p"}, {"kbl", "skl"},
                   {"cfl", "skl"},    {"glk", "skl"},    {"bxt", "skl"},    {"ehl", "icllp"},
                   {"lkf", "icllp"},  {"arl", "mtl"}};
    const char* row = p->simulated;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; ++i)
      if (strcmp(row, aliases[i].neo) == 0) row = aliases[i].row;
    const xe_target_t* t = xe_target_find(row);
    if (t) {
      snprintf(why, why_cap, "NEO's simulation of ProductFamilyOverride=%s", p->simulated);
      return t->name;
    }
  }
  for (size_t i = 0; p->device_id && i < sizeof k_ids / sizeof k_ids[0]; ++i)
    if (p->device_id >= k_ids[i].first && p->device_id <= k_ids[i].last) {
      snprintf(why, why_cap, "PCI id 0x%04x: %s", p->device_id, k_ids[i].product);
      return k_ids[i].row;
    }
  int major = (int)(p->ip_version >> 22), minor = (int)((p->ip_version >> 14) & 0xff);
  for (size_t i = 0; p->ip_version && i < sizeof k_ips / sizeof k_ips[0]; ++i)
    if (major == k_ips[i].major && minor >= k_ips[i].minor_first &&
        minor <= k_ips[i].minor_last) {
      snprintf(why, why_cap, "IP version %d.%d.%d", major, minor, (int)(p->ip_version & 0x3fff));
      return k_ips[i].row;
    }
  if (p->name) {
    static const struct {
      const char *needle, *row;
    } names[] = {{"Max", "pvc"},        {"PVC", "pvc"},          {"Arc(TM) B", "bmg"},
                 {"BMG", "bmg"},        {"Battlemage", "bmg"},   {"Arc(TM) A", "dg2"},
                 {"DG2", "dg2"},        {"Alchemist", "dg2"},    {"Iris(R) Xe MAX", "dg1"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
      if (strstr(p->name, names[i].needle)) {
        snprintf(why, why_cap, "device name \"%s\"", p->name);
        return names[i].row;
      }
  }
  char props[128];
  describe(p, props, sizeof props);
  const char* id = p->device_id ? "an unknown PCI id" : "no PCI id";
  const xe_target_t* t = closest(p);
  if (t) {
    snprintf(why, why_cap, "%s; closest row by properties (%s)", id, props);
    return t->name;
  }
  if (!offers(p, 8) && (offers(p, 16) || offers(p, 32))) {
    snprintf(why, why_cap,
             "%s; no SIMD8: bmg, the client Xe2 row (%s; dots need XMX on this row)", id, props);
    return "bmg";
  }
  snprintf(why, why_cap, "%s; no row fits (%s): skl, the most conservative row", id, props);
  return "skl";
}
