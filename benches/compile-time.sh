#!/usr/bin/env bash
# Compile time of the derives against serde's alone, on the same generated models.
#
#   benches/compile-time.sh [MODELS] [RUNS]      (defaults: 200 models, 3 runs)
#   COUNT=instructions benches/compile-time.sh [MODELS]
#   KIND=plain COUNT=instructions benches/compile-time.sh 100
#
# `KIND=plain` generates the commonest model instead: a `Document` with an `ObjectId` id, five
# scalar fields and one `#[embed(max = 20)]` array of a three-field `BsonSchema` struct, no
# copies and no queries (against the same structs with serde's derives alone).
#
# Generates MODELS collection roots twice into a scratch workspace: `ours` as users write them
# (`#[derive(Document, Serialize, Deserialize)]` with indexes, a declared query, constraints,
# references, `#[extended_ref]` copies, an internally tagged enum with data and a flattened struct), `plain` with serde's derives alone on the same structs (the copy
# types written out by hand). Both crates have the same dependencies. Each run touches the model
# file of each crate and rebuilds it (`cargo build`, dev profile), alternating which goes first;
# prints the median of each and the ratio ours / plain.
#
# Wall-clock times on a shared virtual machine vary by a third between identical rebuilds, so
# `COUNT=instructions` counts instead what rustc executes for each crate's touched rebuild,
# under valgrind's callgrind (the same count on every run of the same inputs, whatever else the
# machine is doing; about 50x slower, so use fewer models, e.g. 60): one run of each, their
# ratio printed the same way.
#
# The scratch workspace and its own target dir live under ${COMPILE_TIME_DIR:-/tmp/mongo-schema-compile-time},
# so the shared target dir is left alone; the first build compiles the dependencies (minutes).
set -euo pipefail

models=${1:-200}
runs=${2:-3}
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${COMPILE_TIME_DIR:-/tmp/mongo-schema-compile-time}
export CARGO_TARGET_DIR="$dir/target"

mkdir -p "$dir/ours/src" "$dir/plain/src"
cat >"$dir/Cargo.toml" <<EOF
[workspace]
members = ["ours", "plain"]
resolver = "2"

[workspace.dependencies]
mongo-schema = { path = "$repo" }
serde = { version = "1", features = ["derive"] }
EOF
for crate in ours plain; do
    cat >"$dir/$crate/Cargo.toml" <<EOF
[package]
name = "compile-time-$crate"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
mongo-schema.workspace = true
serde.workspace = true
EOF
    echo 'mod models;' >"$dir/$crate/src/lib.rs"
done
# pin the same versions as the project
cp "$repo/Cargo.lock" "$dir/Cargo.lock"

# the commonest model: scalars and one bounded array of a small embedded struct
generate_plain_kind() {
    local flavour=$1 i
    echo '#![allow(dead_code)]'
    echo 'use mongo_schema::prelude::*;'
    echo 'use serde::{Deserialize, Serialize};'
    for ((i = 0; i < models; i++)); do
        echo
        if [[ $flavour == ours ]]; then
            echo '#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]'
            echo "#[collection(name = \"model_$i\")]"
        else
            echo '#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]'
        fi
        echo "pub struct Model$i {"
        echo '    #[serde(rename = "_id")]'
        echo '    pub id: ObjectId,'
        echo '    pub name: String,'
        echo '    pub count: i64,'
        echo '    pub active: bool,'
        echo '    pub score: f64,'
        echo '    pub created_at: DateTime,'
        [[ $flavour == ours ]] && echo '    #[embed(max = 20)]'
        echo "    pub lines: Vec<Model${i}Line>,"
        echo '}'
        echo
        if [[ $flavour == ours ]]; then
            echo '#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]'
        else
            echo '#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]'
        fi
        echo "pub struct Model${i}Line {"
        echo '    pub sku: String,'
        echo '    pub quantity: i32,'
        echo '    pub price: f64,'
        echo '}'
    done
}

# model i copies `name` of model i-1 and references it
generate() {
    if [[ ${KIND:-} == plain ]]; then
        generate_plain_kind "$1"
        return
    fi
    local flavour=$1 i prev
    echo '#![allow(dead_code)]'
    echo 'use mongo_schema::prelude::*;'
    echo 'use serde::{Deserialize, Serialize};'
    for ((i = 0; i < models; i++)); do
        prev=$((i > 0 ? i - 1 : 0))
        echo
        if [[ $flavour == ours ]]; then
            echo '#[derive(Document, Serialize, Deserialize, Debug, Clone, PartialEq)]'
            echo "#[collection(name = \"model_$i\")]"
            echo '#[index(keys(name = 1, count = -1))]'
            echo '#[query(name = "by_name", eq(name), sort(count = -1), limit = 20)]'
        else
            echo '#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]'
        fi
        echo "pub struct Model$i {"
        echo '    #[serde(rename = "_id")]'
        echo '    pub id: ObjectId,'
        [[ $flavour == ours ]] && echo '    #[schema(min_length = 1, max_length = 80)]'
        echo '    pub name: String,'
        [[ $flavour == ours ]] && echo '    #[schema(minimum = 0)]'
        echo '    pub count: i64,'
        echo '    #[serde(skip_serializing_if = "Option::is_none")]'
        echo '    pub note: Option<String>,'
        [[ $flavour == ours ]] && echo '    #[embed(max = 20)]'
        echo '    pub tags: Vec<String>,'
        echo '    pub created_at: DateTime,'
        echo "    pub state: Model${i}State,"
        echo '    #[serde(flatten)]'
        echo "    pub meta: Model${i}Meta,"
        if ((i > 0)); then
            [[ $flavour == ours ]] && echo '    #[reference]'
            echo "    pub parent_id: Ref<Model$prev>,"
            [[ $flavour == ours ]] &&
                echo "    #[extended_ref(to = Model$prev, fields = \"name, count\", sync = \"async\")]"
            echo "    pub parent: Option<Model${i}Parent>,"
        fi
        echo '}'
        # an internally tagged enum with data and a flattened struct in every model
        echo
        if [[ $flavour == ours ]]; then
            echo '#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]'
        else
            echo '#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]'
        fi
        echo '#[serde(tag = "state", rename_all = "snake_case")]'
        echo "pub enum Model${i}State {"
        echo '    Open,'
        echo '    Pending { until: DateTime },'
        echo '    Closed {'
        [[ $flavour == ours ]] && echo '        #[schema(max_length = 200)]'
        echo '        reason: String,'
        echo '    },'
        echo '}'
        echo
        if [[ $flavour == ours ]]; then
            echo '#[derive(BsonSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]'
        else
            echo '#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]'
        fi
        echo "pub struct Model${i}Meta {"
        echo '    pub revision: i32,'
        echo '    pub editor: String,'
        echo '}'
        if ((i > 0)) && [[ $flavour == plain ]]; then
            echo
            echo '#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]'
            echo "pub struct Model${i}Parent {"
            echo '    #[serde(rename = "_id")]'
            echo '    pub id: ObjectId,'
            echo '    pub name: String,'
            echo '    pub count: i64,'
            echo '}'
        fi
    done
    if [[ $flavour == plain ]]; then
        # `Ref<T>` needs `T: Document`; the plain side implements it by hand, as data
        for ((i = 0; i < models; i++)); do
            echo "impl mongo_schema::Document for Model$i { const COLLECTION: &'static str = \"model_$i\"; type Id = ObjectId; fn collection_spec() -> mongo_schema::CollectionSpec { unimplemented!() } }"
            echo "impl mongo_schema::BsonSchema for Model$i { fn bson_schema() -> mongo_schema::bson::Document { unimplemented!() } }"
        done
    fi
}
generate ours >"$dir/ours/src/models.rs"
generate plain >"$dir/plain/src/models.rs"

cd "$dir"
echo "building dependencies and a first build of both crates (target dir $CARGO_TARGET_DIR)..." >&2
cargo build --quiet -p compile-time-ours -p compile-time-plain

build_seconds() {
    touch "$dir/$1/src/models.rs"
    local start end
    start=$(date +%s.%N)
    cargo build --quiet -p "compile-time-$1"
    end=$(date +%s.%N)
    echo "$end - $start" | bc -l
}

median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

if [[ ${COUNT:-} == instructions ]]; then
    command -v valgrind >/dev/null || {
        echo "COUNT=instructions needs valgrind (apt-get install valgrind)" >&2
        exit 1
    }
    # a rustc wrapper that runs only the two bench crates under callgrind
    cat >"$dir/count-rustc.sh" <<'WRAP'
#!/usr/bin/env bash
rustc=$1
shift
for arg in "$@"; do
    case $arg in compile_time_ours | compile_time_plain)
        exec valgrind --tool=callgrind --callgrind-out-file=/dev/null "$rustc" "$@" 2>"$COUNT_DIR/$arg.log"
        ;;
    esac
done
exec "$rustc" "$@"
WRAP
    chmod +x "$dir/count-rustc.sh"
    counts=()
    for crate in ours plain; do
        touch "$dir/$crate/src/models.rs"
        COUNT_DIR=$dir RUSTC_WRAPPER="$dir/count-rustc.sh" cargo build --quiet -p "compile-time-$crate"
        counts+=("$(grep -o 'Collected : [0-9]*' "$dir/compile_time_$crate.log" | grep -o '[0-9]*$')")
    done
    printf '%d %smodels, instructions of a touched rebuild: ours %d, serde alone %d, ratio %.3f\n' \
        "$models" "${KIND:+$KIND }" "${counts[0]}" "${counts[1]}" "$(echo "${counts[0]} / ${counts[1]}" | bc -l)"
    exit 0
fi

ours=() plain=()
for ((run = 0; run < runs; run++)); do
    if ((run % 2 == 0)); then
        ours+=("$(build_seconds ours)")
        plain+=("$(build_seconds plain)")
    else
        plain+=("$(build_seconds plain)")
        ours+=("$(build_seconds ours)")
    fi
    printf 'run %d: ours %.2f s, serde alone %.2f s\n' "$((run + 1))" "${ours[-1]}" "${plain[-1]}" >&2
done
m_ours=$(median "${ours[@]}")
m_plain=$(median "${plain[@]}")
printf '%d models, median of %d rebuilds: ours %.2f s, serde alone %.2f s, ratio %.2f\n' \
    "$models" "$runs" "$m_ours" "$m_plain" "$(echo "$m_ours / $m_plain" | bc -l)"
