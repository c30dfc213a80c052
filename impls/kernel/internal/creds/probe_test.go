//go:build linux && amd64

package creds

import "testing"

// A uid_map maps the ids of its ranges only: unshare -Ur maps root alone.
func TestMapped(t *testing.T) {
	for _, c := range []struct {
		uidMap string
		uid    uint32
		want   bool
	}{
		{"         0          0 4294967295\n", 1000, true},
		{"         0       1000          1\n", 1000, false},
		{"         0       1000          1\n", 0, true},
		{"0 0 1\n1000 100000 65536\n", 1000, true},
		{"", 1000, false},
	} {
		if got := mapped(c.uidMap, c.uid); got != c.want {
			t.Errorf("mapped(%q, %d) = %v, want %v", c.uidMap, c.uid, got, c.want)
		}
	}
}
