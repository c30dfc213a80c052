package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
)

// profileEnv names a directory where every ipcfuzz process of a run (the
// command and each built-in plugin it starts, which inherit the variable)
// writes a CPU profile of its own, NAME-PID.pprof: where a compare's time
// goes, on either side of the plugin protocol (go tool pprof FILE).
const profileEnv = "IPCFUZZ_CPUPROFILE"

// startProfile starts the CPU profile profileEnv asks for (none when it is
// unset) and returns what stops it and writes it out; a profile that
// cannot be started is said on stderr and the command runs without it.
func startProfile(args []string) (stop func()) {
	dir := os.Getenv(profileEnv)
	if dir == "" {
		return func() {}
	}
	name := "ipcfuzz"
	if len(args) > 0 {
		name = strings.Join(args[:min(len(args), 3)], "-")
		name = strings.Map(func(r rune) rune {
			if r == '/' || r == ' ' || r == ':' || r == '=' {
				return '_'
			}
			return r
		}, name)
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", name, os.Getpid()))
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
		if err != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ipcfuzz: %s=%s: no CPU profile: %v\n", profileEnv, dir, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "ipcfuzz: CPU profile %s: %v\n", path, err)
		}
	}
}
