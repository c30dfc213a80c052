//go:build !linux

package kernel

func kernelRelease() string { return "" }
