#!/usr/bin/env bash
# generate-protos.sh — regenerate the Swift code for etcd's v3 API from Fleet/Protos
# into Fleet/Sources/EtcdAPI/Generated/ with protoc and two Swift plugins:
#   protoc-gen-swift         (apple/swift-protobuf 1.39.0, product "protoc-gen-swift")
#                            -> rpc.pb.swift, kv.pb.swift (messages)
#   protoc-gen-grpc-swift-2  (grpc/grpc-swift-protobuf 2.4.1, product
#                            "protoc-gen-grpc-swift-2") -> rpc.grpc.swift (clients)
# Neither plugin may be newer than the swift-protobuf / grpc-swift-protobuf the
# package resolves. Build them once, e.g.
#   swift build -c release --product protoc-gen-swift
#   swift build -c release --product protoc-gen-grpc-swift-2
# and pass their paths:
#   Fleet/scripts/generate-protos.sh [PROTOC_GEN_SWIFT PROTOC_GEN_GRPC_SWIFT_2]
# or set PROTOC_GEN_SWIFT / PROTOC_GEN_GRPC_SWIFT_2 (default: found on PATH).
#
# Other environment:
#   PROTOC      protoc binary (default: protoc; Debian: apt-get install protobuf-compiler)
#   VISIBILITY  Package (default), Public or Internal — access level of generated code
#   OUT_DIR     output directory (default: Fleet/Sources/EtcdAPI/Generated)
#
# Plugin options used (names as parsed by the plugins' GeneratorOptions):
#   swift:        Visibility=<v>,FileNaming=DropPath
#   grpc-swift-2: Visibility=<v>,Client=true,Server=false,FileNaming=DropPath
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fleet=$(cd "$here/.." && pwd)
proto_dir="$fleet/Protos"
out_dir=${OUT_DIR:-$fleet/Sources/EtcdAPI/Generated}
visibility=${VISIBILITY:-Package}
protoc_bin=${PROTOC:-protoc}

if (($# != 0 && $# != 2)); then
    echo "usage: $0 [PROTOC_GEN_SWIFT PROTOC_GEN_GRPC_SWIFT_2]" >&2
    exit 2
fi
gen_swift=${1:-${PROTOC_GEN_SWIFT:-$(command -v protoc-gen-swift || true)}}
gen_grpc=${2:-${PROTOC_GEN_GRPC_SWIFT_2:-$(command -v protoc-gen-grpc-swift-2 || true)}}

case $visibility in
    Package | Public | Internal) ;;
    *) echo "VISIBILITY must be Package, Public or Internal (got '$visibility')" >&2; exit 2 ;;
esac
command -v "$protoc_bin" >/dev/null 2>&1 || {
    echo "protoc not found; install it: apt-get install -y --no-install-recommends protobuf-compiler" >&2
    exit 1
}
for p in "$gen_swift" "$gen_grpc"; do
    if [[ -z $p || ! -x $p ]]; then
        echo "plugin not found or not executable: '${p}'" >&2
        echo "pass PROTOC_GEN_SWIFT and PROTOC_GEN_GRPC_SWIFT_2 (see the header of $0)" >&2
        exit 1
    fi
done

protos=("$proto_dir"/*.proto)
((${#protos[@]} > 0)) && [[ -e ${protos[0]} ]] || { echo "no .proto files in $proto_dir" >&2; exit 1; }

# Generate into a scratch directory, then replace the old output in one step, so a
# failing plugin leaves the previous generated code untouched.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$protoc_bin" \
    --proto_path="$proto_dir" \
    --plugin=protoc-gen-swift="$gen_swift" \
    --plugin=protoc-gen-grpc-swift-2="$gen_grpc" \
    --swift_opt="Visibility=$visibility,FileNaming=DropPath" \
    --swift_out="$tmp" \
    --grpc-swift-2_opt="Visibility=$visibility,Client=true,Server=false,FileNaming=DropPath" \
    --grpc-swift-2_out="$tmp" \
    "${protos[@]}"

mkdir -p "$out_dir"
rm -f "$out_dir"/*.pb.swift "$out_dir"/*.grpc.swift
cp "$tmp"/*.swift "$out_dir"/
echo "generated into $out_dir:" >&2
(cd "$out_dir" && ls -1 -- *.swift) >&2
