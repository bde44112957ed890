# --- time series -------------------------------------------------------------------------------


def _timeseries_txn_error(name: str, db: str, coll: str) -> dict[str, Any]:
    # src/mongo/db/commands/write_commands.cpp (7.0): inserts,
    # "Cannot insert into a time-series collection in a multi-document transaction: <ns>";
    # updates and deletes, "Cannot perform a multi-document transaction on a time-series
    # collection: <ns>"; OperationNotSupportedInTransaction (263).
    # jstests/core/txns/timeseries_insert_in_txn.js,
    # jstests/noPassthrough/timeseries/timeseries_delete_update_in_txn.js. (8.0 takes a single
    # update or delete of one measurement in a transaction; 7.0 takes none.)
    if name == "insert":
        return _error(
            263,
            "Cannot insert into a time-series collection in a multi-document transaction: "
            + _ns(db, coll),
        )
    return _error(
        263,
        "Cannot perform a multi-document transaction on a time-series collection: "
        + _ns(db, coll),
    )


# mongod has no limit of its own on a measurement: it refuses one whose bucket would pass the
# 16 MiB user BSON limit (BSONObjectTooLarge, 10334, the bucket document's insert:
# "object to insert too large. size in bytes: .., max size: 16777216"). A new bucket always
# takes its first measurement (bucket_catalog_internal.cpp, `addMeasurementToBatchAndBucket`
# with `isNewlyOpenedBucket`), and holds the meta field once (`meta`) and every other field
# three times (`control.min`, `control.max`, `data`):
# jstests/core/timeseries/write/timeseries_insert_respect_max_bson_size_too_big.js refuses a
# 16 MB meta and 8 MB of metrics ("too big due to total metric size being copied into control
# block"). The manual's "4 MB" (time series limitations) is not enforced by the server. This
# is the bound mongo-schema's `Schema::build` checks (`SizeBound::of_measurement`).
MAX_BUCKET = 16 * 1024 * 1024
BUCKET_COPIES = 3


def _bucket_size(doc: Mapping, meta: Any) -> int:
    """The size of the bucket of one measurement: the meta field once, the rest three times."""
    import bson

    whole = len(bson.encode(doc))
    meta_element = 0
    if isinstance(meta, str) and meta in doc:
        # type byte, key and NUL, value: the element as it is in the measurement
        meta_element = len(bson.encode({meta: doc[meta]})) - 5
    return meta_element + BUCKET_COPIES * (whole - meta_element)

# `create` options a time series collection cannot have: src/mongo/db/commands/create_command.cpp
# ("<ns>: 'timeseries' is not allowed with '<option>'", InvalidOptions),
# jstests/noPassthrough/change_stream_pre_and_post_images_option.js (5.1+: pre- and post-images).
_TS_CREATE_REFUSED = (
    "validator",
    "validationLevel",
    "validationAction",
    "changeStreamPreAndPostImages",
    "recordPreImages",
    "viewOn",
    "pipeline",
    "clusteredIndex",
    "idIndex",
    "autoIndexId",
    "size",
    "max",
)
# `collMod` options a time series collection cannot take: src/mongo/db/catalog/coll_mod.cpp,
# "option not supported on a time-series collection: <option>" (InvalidOptions).
_TS_COLLMOD_REFUSED = (
    "validator",
    "validationLevel",
    "validationAction",
    "changeStreamPreAndPostImages",
    "recordPreImages",
    "viewOn",
    "pipeline",
    "cappedSize",
    "cappedMax",
)


