//go:build linux

package kernel

import "syscall"

// kernelRelease returns "Linux <release>" from uname, or "" if it fails.
func kernelRelease() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return ""
	}
	b := make([]byte, 0, len(u.Release))
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return "Linux " + string(b)
}
