//go:build linux && amd64

package creds

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProbeUID is the uid CanSwitch tries: the one the generators' scripts run
// operations as (as=1000).
const ProbeUID = 1000

// CanSwitch checks that the calling thread, whose credentials are self,
// can run as uid and switch back, as an operation with as= needs, and
// leaves it as it was. The error says what is missing: in a user
// namespace (unshare -Ur) setgroups is denied and no other uid is mapped.
func CanSwitch(self Creds, uid uint32) error {
	err := BecomeUser(self, uid)
	if rerr := Restore(self); rerr != nil {
		return fmt.Errorf("switching to uid %d and back: %v; restoring: %w", uid, err, rerr)
	}
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w%s", err, missing(uid))
}

// missing explains, from /proc/self, why a switch to uid fails, or "".
func missing(uid uint32) string {
	if data, err := os.ReadFile("/proc/self/setgroups"); err == nil && strings.TrimSpace(string(data)) == "deny" {
		return " (setgroups is denied in this user namespace, /proc/self/setgroups says deny: it needs CAP_SETGID over the groups, as root outside a user namespace has)"
	}
	if data, err := os.ReadFile("/proc/self/uid_map"); err == nil && !mapped(string(data), uid) {
		return fmt.Sprintf(" (uid %d is not mapped in this user namespace, /proc/self/uid_map: it needs CAP_SETUID over it, as root outside a user namespace has)", uid)
	}
	return ""
}

// mapped reports whether a uid_map maps uid.
func mapped(uidMap string, uid uint32) bool {
	for _, line := range strings.Split(uidMap, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		first, err1 := strconv.ParseUint(f[0], 10, 32)
		n, err2 := strconv.ParseUint(f[2], 10, 32)
		if err1 == nil && err2 == nil && uint64(uid) >= first && uint64(uid) < first+n {
			return true
		}
	}
	return false
}
