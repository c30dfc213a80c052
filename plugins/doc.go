// Package plugins is the wire side of ipcfuzz: the gRPC protocol an
// implementation plugin speaks (proto/ipcfuzz/v1, generated code committed),
// the lossless conversions between that protocol and the vocabulary of
// harness/ops, and the go-plugin server glue.
//
// Any ops.Impl becomes a plugin binary with a one-line main:
//
//	func main() { plugins.Serve(ops.NewLocal(info, myModel)) }
//
// The host side (launching, calling, and surviving misbehaving plugins) lives
// in plugins/host.
package plugins

//go:generate sh proto/generate.sh
