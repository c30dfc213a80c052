package corpus

import (
	"runtime/debug"
)

// unstamped is the revision of a build that recorded none.
const unstamped = "unknown (the build stamped none: go run, go test or -buildvcs=false)"

// BuildVersion returns this binary's module version ("(devel)" when built
// in a checkout) and its VCS revision, "(modified)" after it when the tree
// had changes, or unstamped: what a finding header records of the binary
// that found it.
func BuildVersion() (version, revision string) {
	version, revision = "unknown", unstamped
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return version, revision
	}
	if bi.Main.Version != "" {
		version = bi.Main.Version
	}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && revision != unstamped {
		revision += " (modified)"
	}
	return version, revision
}
