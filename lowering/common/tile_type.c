// Reading tile types and op attributes back from parsed MLIR, shared by the
// lowerings.
#include <stdio.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "lowering.h"

static void append_cb(MlirStringRef s, void* user) {
  zt_strbuf_append((zt_strbuf_t*)user, s.data, s.length);
}

static zt_status_t scalar_kind(MlirType t, zt_scalar_kind_t* kind,
                               zt_scalar_kind_t* pointee) {
  *pointee = ZT_I8;
  if (mlirTypeIsAInteger(t)) {
    switch (mlirIntegerTypeGetWidth(t)) {
      case 1: *kind = ZT_I1; return NULL;
      case 8: *kind = ZT_I8; return NULL;
      case 16: *kind = ZT_I16; return NULL;
      case 32: *kind = ZT_I32; return NULL;
      case 64: *kind = ZT_I64; return NULL;
      default: break;
    }
  } else if (mlirTypeIsAF16(t)) {
    *kind = ZT_F16;
    return NULL;
  } else if (mlirTypeIsABF16(t)) {
    *kind = ZT_BF16;
    return NULL;
  } else if (mlirTypeIsAF32(t)) {
    *kind = ZT_F32;
    return NULL;
  } else if (mlirTypeIsAF64(t)) {
    *kind = ZT_F64;
    return NULL;
  }
  // IRDL types have no C accessors: read the pointee from the spelling.
  zt_strbuf_t sb;
  zt_strbuf_init(&sb);
  mlirTypePrint(t, append_cb, &sb);
  zt_status_t s = NULL;
  const char* pfx = "!tile.ptr<";
  size_t pl = strlen(pfx);
  if (sb.data && sb.size > pl + 1 && strncmp(sb.data, pfx, pl) == 0 &&
      sb.data[sb.size - 1] == '>' &&
      zt_scalar_kind_parse(sb.data + pl, sb.size - pl - 1, pointee) &&
      *pointee != ZT_PTR) {
    *kind = ZT_PTR;
  } else {
    s = zt_make_status(ZT_STATUS_UNSUPPORTED, "unsupported element type %s",
                       sb.data ? sb.data : "?");
  }
  zt_strbuf_deinit(&sb);
  return s;
}

zt_status_t zt_tile_type_from_mlir(MlirType type, zt_type_t* out) {
  memset(out, 0, sizeof *out);
  MlirType elem = type;
  if (mlirTypeIsARankedTensor(type)) {
    int64_t rank = mlirShapedTypeGetRank(type);
    if (rank < 1 || rank > ZT_MAX_RANK)
      return zt_make_status(ZT_STATUS_UNSUPPORTED, "tensor rank %lld",
                            (long long)rank);
    out->rank = (int32_t)rank;
    for (int64_t i = 0; i < rank; ++i) {
      out->shape[i] = mlirShapedTypeGetDimSize(type, (intptr_t)i);
      if (out->shape[i] <= 0)
        return zt_make_status(ZT_STATUS_UNSUPPORTED, "dynamic tensor shape");
    }
    elem = mlirShapedTypeGetElementType(type);
  }
  return scalar_kind(elem, &out->kind, &out->pointee);
}

const char* zt_tile_kind_spelling(zt_scalar_kind_t kind) {
  return zt_scalar_kind_name(kind);
}

int zt_tile_kind_bytes(zt_scalar_kind_t kind) {
  switch (kind) {
    case ZT_I1: case ZT_I8: return 1;
    case ZT_I16: case ZT_F16: case ZT_BF16: return 2;
    case ZT_I32: case ZT_F32: return 4;
    default: return 8;
  }
}

MlirStringRef zt_kernel_name(MlirOperation kernel) {
  MlirAttribute a =
      mlirOperationGetAttributeByName(kernel, mlirStringRefCreateFromCString("sym_name"));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a))
    return mlirStringRefCreate("", 0);
  return mlirStringAttrGetValue(a);
}

bool zt_dot_is_unsigned(MlirOperation dot) {
  MlirAttribute a =
      mlirOperationGetAttributeByName(dot, mlirStringRefCreateFromCString("input_precision"));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a)) return false;
  MlirStringRef p = mlirStringAttrGetValue(a);
  return p.length == 8 && memcmp(p.data, "unsigned", 8) == 0;
}

bool zt_op_named(MlirOperation op, const char* name) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  return n.length == strlen(name) && memcmp(n.data, name, n.length) == 0;
}

MlirOperation zt_symbol_in_block(MlirBlock block, MlirStringRef name) {
  for (MlirOperation o = mlirBlockGetFirstOperation(block); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o)) {
    MlirAttribute n = mlirOperationGetAttributeByName(o, mlirStringRefCreateFromCString("sym_name"));
    if (mlirAttributeIsNull(n) || !mlirAttributeIsAString(n)) continue;
    MlirStringRef s = mlirStringAttrGetValue(n);
    if (s.length == name.length && !memcmp(s.data, name.data, s.length)) return o;
  }
  return (MlirOperation){NULL};
}

MlirOperation zt_op_in_block(MlirBlock block, const char* name) {
  for (MlirOperation o = mlirBlockGetFirstOperation(block); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o))
    if (zt_op_named(o, name)) return o;
  return (MlirOperation){NULL};
}

bool zt_op_name_has_prefix(MlirOperation op, const char* prefix) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  size_t l = strlen(prefix);
  return n.length >= l && memcmp(n.data, prefix, l) == 0;
}

bool zt_is_zero_splat(MlirValue v) {
  if (!mlirValueIsAOpResult(v)) return false;
  MlirOperation op = mlirOpResultGetOwner(v);
  if (!zt_op_named(op, "tile.splat")) return false;
  MlirValue s = mlirOperationGetOperand(op, 0);
  if (!mlirValueIsAOpResult(s)) return false;
  MlirOperation c = mlirOpResultGetOwner(s);
  if (!zt_op_named(c, "arith.constant")) return false;
  MlirAttribute a = mlirOperationGetAttributeByName(c, mlirStringRefCreateFromCString("value"));
  if (!mlirAttributeIsNull(a) && mlirAttributeIsAInteger(a)) return mlirIntegerAttrGetValueInt(a) == 0;
  return !mlirAttributeIsNull(a) && mlirAttributeIsAFloat(a) &&
         mlirFloatAttrGetValueDouble(a) == 0.0;
}
