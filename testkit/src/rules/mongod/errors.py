# ---------------------------------------------------------------------------------------------
# Errors and mongod's way of printing BSON in them
# ---------------------------------------------------------------------------------------------


def _code_name(code: int) -> str:
    from secantus import mongod_codes

    return mongod_codes.code_name(code)


def _error(code: int, errmsg: str) -> dict[str, Any]:
    return {"ok": 0.0, "errmsg": errmsg, "code": code, "codeName": _code_name(code)}


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def fmt(value: Any) -> str:
    """A value as mongod's `BSONObj::toString` prints it: `{ locale: "xx_NOPE", strength: 2 }`."""
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{k}: {fmt(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        return "[ " + ", ".join(fmt(v) for v in value) + " ]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, float):
        if value == int(value) and abs(value) < 1e16:
            return f"{value:.1f}"
        return repr(value)
    return str(value)


def _bson_type_name(value: Any) -> str:
    # mongod's `typeName` for the types a collation field can have.
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "long" if abs(value) >= 2**31 else "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def _ns(db: str, coll: str) -> str:
    return f"{db}.{coll}"


