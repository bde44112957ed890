# ---------------------------------------------------------------------------------------------
# Collations (rule "collation-locale")
#
# mongod validates a collation with ICU: `CollatorFactoryICU::makeFromBSON`
# (src/mongo/db/query/collation/collator_factory_icu.cpp). A locale is valid when the collator
# ICU builds for it has exactly that locale as its valid locale (`validateLocaleID`), so the
# valid locales are those of the ICU data mongod ships: ICU 57.1 (src/third_party/icu4c-57.1),
# the locales its unit test creates one by one
# (src/mongo/db/query/collation/collator_factory_icu_locales_test.cpp) and the manual lists
# ("Collation Locales and Default Parameters"). Options are checked in `parseToCollationSpec`
# and `validateCollationSpec` of the same file.
# ---------------------------------------------------------------------------------------------

ICU_VERSION = "57.1"

LOCALES: frozenset[str] = frozenset(
    """
    af am ar as az be bg bn bo bs bs_Cyrl ca chr cs cy da de de_AT dsb dz ee el en en_US
    en_US_POSIX eo es et fa fa_AF fi fil fo fr fr_CA ga gl gu ha haw he hi hr hsb hu hy id ig
    is it ja ka kk kl km kn ko kok ky lb lkt ln lo lt lv mk ml mn mr ms mt my nb ne nl nn om or
    pa pl ps pt ro ru se si sk sl smn sq sr sr_Latn sv sw ta te th to tr ug uk ur vi wae yi yo
    zh zh_Hant zu
    """.split()
)

# `<locale>@collation=<variant>`: the variants the manual lists (ICU keyword values).
VARIANTS: frozenset[str] = frozenset(
    "big5han compat dictionary eor gb2312han phonebook phonetic pinyin reformed search "
    "searchjl standard stroke traditional unihan zhuyin".split()
)

_CASE_FIRST = ("upper", "lower", "off")
_ALTERNATE = ("non-ignorable", "shifted")
_MAX_VARIABLE = ("punct", "space")

# ICU's root defaults, what mongod reports for every field a collation leaves out (most locales;
# `fr_CA` compares accents backwards, `da` puts upper case first).
ROOT_DEFAULTS: dict[str, Any] = {
    "caseLevel": False,
    "caseFirst": "off",
    "strength": 3,
    "numericOrdering": False,
    "alternate": "non-ignorable",
    "maxVariable": "punct",
    "normalization": False,
    "backwards": False,
}
LOCALE_DEFAULTS: dict[str, dict[str, Any]] = {
    "fr_CA": {"backwards": True},
    "da": {"caseFirst": "upper"},
}


def _locale_suggestion(locale: str) -> str | None:
    # What ICU would have used: the longest known prefix of the locale's parts, the language
    # in lower case. mongod prints it as "Did you mean '...'?" unless it is ICU's root.
    base = locale.split("@", 1)[0]
    parts = base.replace("-", "_").split("_")
    if parts:
        parts[0] = parts[0].lower()
    for n in range(len(parts), 0, -1):
        candidate = "_".join(parts[:n])
        if candidate in LOCALES and candidate != locale:
            return candidate
    return None


def _locale_known(locale: str) -> bool:
    if locale in LOCALES:
        return True
    base, sep, keywords = locale.partition("@")
    if not sep or base not in LOCALES:
        return False
    key, eq, value = keywords.partition("=")
    return key == "collation" and bool(eq) and value in VARIANTS


def collation_error(spec: Any) -> dict[str, Any] | None:
    """mongod's error for a collation it refuses, `None` for one it takes (or a non-document,
    which the command's own parser judges)."""
    if not isinstance(spec, Mapping):
        return None
    shown = fmt(spec)
    if "locale" not in spec:
        return _error(4, 'Missing expected field "locale"')
    locale = spec["locale"]
    if not isinstance(locale, str):
        return _error(
            14,
            f'"locale" had the wrong type. Expected string, found {_bson_type_name(locale)}',
        )
    if "\0" in locale:
        return _error(2, f"Field 'locale' cannot contain null byte. Collation spec: {shown}")
    if locale == "simple":
        if len(spec) > 1:
            return _error(
                9, f"If locale=simple, no other fields should be present in: {shown}"
            )
        return None
    if locale == "":
        return _error(2, f"Field 'locale' cannot be the empty string in: {shown}")
    if not _locale_known(locale):
        message = f"Field 'locale' is invalid in: {shown}"
        suggestion = _locale_suggestion(locale)
        if suggestion is not None:
            message += f". Did you mean '{suggestion}'?"
        return _error(2, message)

    parsed = 1

    def want_bool(field: str) -> dict[str, Any] | None:
        value = spec[field]
        if not isinstance(value, bool):
            return _error(
                14,
                f'"{field}" had the wrong type. Expected bool, found {_bson_type_name(value)}',
            )
        return None

    def want_string(field: str) -> dict[str, Any] | None:
        value = spec[field]
        if not isinstance(value, str):
            return _error(
                14,
                f'"{field}" had the wrong type. Expected string, found {_bson_type_name(value)}',
            )
        return None

    if "caseLevel" in spec:
        parsed += 1
        if (e := want_bool("caseLevel")) is not None:
            return e
    if "caseFirst" in spec:
        parsed += 1
        if (e := want_string("caseFirst")) is not None:
            return e
        if spec["caseFirst"] not in _CASE_FIRST:
            return _error(
                9,
                "Field 'caseFirst' must be 'upper', 'lower', or 'off'. Got: "
                + spec["caseFirst"],
            )
    if "strength" in spec:
        parsed += 1
        strength = spec["strength"]
        if isinstance(strength, bool) or not isinstance(strength, (int, float)):
            return _error(
                14,
                '"strength" had the wrong type. Expected number, found '
                + _bson_type_name(strength),
            )
        if isinstance(strength, float) and strength != int(strength):
            return _error(
                2,
                'Expected field "strength" to have a value exactly representable as a 64-bit '
                f"integer, but found strength: {fmt(strength)}",
            )
        if int(strength) not in (1, 2, 3, 4, 5):
            return _error(
                9, f"Field 'strength' must be an integer 1 through 5. Got: {int(strength)}"
            )
    if "numericOrdering" in spec:
        parsed += 1
        if (e := want_bool("numericOrdering")) is not None:
            return e
    if "alternate" in spec:
        parsed += 1
        if (e := want_string("alternate")) is not None:
            return e
        if spec["alternate"] not in _ALTERNATE:
            return _error(
                9,
                "Field 'alternate' must be 'non-ignorable' or 'shifted'. Got: "
                + spec["alternate"],
            )
    if "maxVariable" in spec:
        parsed += 1
        if (e := want_string("maxVariable")) is not None:
            return e
        if spec["maxVariable"] not in _MAX_VARIABLE:
            return _error(
                9,
                "Field 'maxVariable' must be 'punct' or 'space'. Got: " + spec["maxVariable"],
            )
    if "normalization" in spec:
        parsed += 1
        if (e := want_bool("normalization")) is not None:
            return e
    if "backwards" in spec:
        parsed += 1
        if (e := want_bool("backwards")) is not None:
            return e
    if "version" in spec:
        if (e := want_string("version")) is not None:
            return e
        if spec["version"] != ICU_VERSION:
            return _error(
                161,
                f"Requested collation version {spec['version']} but the only available "
                f"collator version was {ICU_VERSION}. Requested collation spec: {shown}",
            )
        parsed += 1
    if parsed < len(spec):
        return _error(9, f"Collation spec contains unknown field. Collation spec: {shown}")

    full = expand(spec)
    if full["backwards"] and full["strength"] == 1:
        return _error(2, f"'backwards' is invalid with 'strength' of 1 in: {fmt(full)}")
    if full["caseFirst"] != "off" and not full["caseLevel"] and full["strength"] in (1, 2):
        return _error(
            2,
            "'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 "
            f"in: {fmt(full)}",
        )
    return None


def expand(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A valid, non-simple collation with every option filled in, as mongod reports it."""
    locale = spec["locale"]
    full: dict[str, Any] = {"locale": locale}
    defaults = dict(ROOT_DEFAULTS)
    defaults.update(LOCALE_DEFAULTS.get(locale.split("@", 1)[0], {}))
    for field, default in defaults.items():
        value = spec.get(field, default)
        if field == "strength":
            value = int(value)
        full[field] = value
    full["version"] = ICU_VERSION
    return full


def _is_simple(spec: Any) -> bool:
    return spec is None or (isinstance(spec, Mapping) and spec.get("locale") == "simple")


def same_collation(a: Any, b: Any) -> bool:
    """Whether two collations (`None` or simple for the simple one) compare the same way."""
    if _is_simple(a) or _is_simple(b):
        return _is_simple(a) and _is_simple(b)
    return expand(a) == expand(b)


