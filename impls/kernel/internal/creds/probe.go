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
	if why := missing(uid); why != "" {
		return fmt.Errorf("%s: %w", why, err)
	}
	return err
}

// missing explains, from /proc/self, why a switch to uid fails, or "":
// what a user namespace (unshare -Ur) lacks that root outside one has.
func missing(uid uint32) string {
	var why []string
	if data, err := os.ReadFile("/proc/self/uid_map"); err == nil && !mapped(string(data), uid) {
		why = append(why, "uid not mapped")
	}
	if data, err := os.ReadFile("/proc/self/gid_map"); err == nil && !mapped(string(data), uid) {
		why = append(why, "gid not mapped")
	}
	if data, err := os.ReadFile("/proc/self/setgroups"); err == nil && strings.TrimSpace(string(data)) == "deny" {
		why = append(why, "setgroups denied")
	}
	if len(why) == 0 {
		return ""
	}
	return "no CAP_SETUID/CAP_SETGID over uid " + strconv.Itoa(int(uid)) + " (a user namespace: " + strings.Join(why, ", ") + ")"
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
