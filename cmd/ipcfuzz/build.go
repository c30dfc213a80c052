package main

import (
	"runtime/debug"
)

// buildVersion returns this binary's module version ("(devel)" when built
// in a checkout) and its VCS revision, "(modified)" after it when the tree
// had changes, or "unknown" when the build did not stamp one (go run,
// go test, -buildvcs=false).
func buildVersion() (version, revision string) {
	version, revision = "unknown", "unknown"
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
	if modified && revision != "unknown" {
		revision += " (modified)"
	}
	return version, revision
}
