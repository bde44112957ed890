# ---------------------------------------------------------------------------------------------
# Change streams
# ---------------------------------------------------------------------------------------------

# The collections the change stream being served admits (`None`: any), while its command runs.
_STREAM_COLLECTIONS: contextvars.ContextVar[frozenset[str] | None] = contextvars.ContextVar(
    "stream_collections", default=None
)


def stream_collections(match: Mapping[str, Any]) -> frozenset[str] | None:
    """The collections a change stream's `$match` admits by its conditions on `ns.coll` (a
    string or a `$in` of strings, under `$and` and in every branch of an `$or`); `None` when
    it admits any."""
    found: list[frozenset[str]] = []
    for key, condition in match.items():
        if key == "ns.coll":
            if isinstance(condition, str):
                found.append(frozenset([condition]))
            elif (
                isinstance(condition, Mapping)
                and list(condition) == ["$in"]
                and isinstance(condition["$in"], list)
                and all(isinstance(c, str) for c in condition["$in"])
            ):
                found.append(frozenset(condition["$in"]))
        elif key == "$and" and isinstance(condition, list):
            for part in condition:
                if isinstance(part, Mapping):
                    admitted = stream_collections(part)
                    if admitted is not None:
                        found.append(admitted)
        elif key == "$or" and isinstance(condition, list) and condition:
            branches = [stream_collections(b) if isinstance(b, Mapping) else None for b in condition]
            if all(b is not None for b in branches):
                found.append(frozenset().union(*branches))
    if not found:
        return None
    return frozenset.intersection(*found)


