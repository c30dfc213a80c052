#!/bin/sh
# Regenerates the Go code of the plugin protocol (ipcfuzz/v1/impl.proto).
# Run from anywhere: `go generate ./plugins` or `sh plugins/proto/generate.sh`.
#
# Needs protoc (Debian: apt-get install -y protobuf-compiler, 3.21.12) and the
# protoc-gen-go / protoc-gen-go-grpc tools pinned by the `tool` directives in
# go.mod; `go tool -n` builds them if needed and prints their paths.
set -eu
cd "$(dirname "$0")"

command -v protoc >/dev/null 2>&1 || {
	echo "generate.sh: protoc not found (apt-get install -y protobuf-compiler)" >&2
	exit 1
}
gen_go=$(go tool -n google.golang.org/protobuf/cmd/protoc-gen-go)
gen_grpc=$(go tool -n google.golang.org/grpc/cmd/protoc-gen-go-grpc)

protoc -I . \
	--plugin=protoc-gen-go="$gen_go" \
	--plugin=protoc-gen-go-grpc="$gen_grpc" \
	--go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative \
	ipcfuzz/v1/impl.proto
