//go:build linux

package kernel

import "golang.org/x/sys/unix"

// kernelRelease returns "Linux <release>" from uname, or "" if it fails.
func kernelRelease() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return "Linux " + unix.ByteSliceToString(u.Release[:])
}
