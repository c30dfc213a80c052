// Package props is the registry of subsystems: every subsystem the drivers
// can generate scripts for, compare and fuzz. compare, replay, list, help,
// the help's tables and the nightly shards read it; adding a subsystem is
// adding its value here.
package props

import (
	"fmt"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/props/engine"
	"github.com/ipcfuzz/ipcfuzz/props/ids"
	"github.com/ipcfuzz/ipcfuzz/props/msg"
	"github.com/ipcfuzz/ipcfuzz/props/sem"
	"github.com/ipcfuzz/ipcfuzz/props/shm"
	"github.com/ipcfuzz/ipcfuzz/props/vma"
)

// Subsystems lists every subsystem, in the order help shows them.
func Subsystems() []engine.Subsystem {
	return []engine.Subsystem{ids.Subsystem, shm.Subsystem, msg.Subsystem, sem.Subsystem, vma.Subsystem}
}

// Names lists the subsystems' names.
func Names() []string {
	var out []string
	for _, s := range Subsystems() {
		out = append(out, s.Name)
	}
	return out
}

// Lookup returns the subsystem called name.
func Lookup(name string) (engine.Subsystem, error) {
	for _, s := range Subsystems() {
		if s.Name == name {
			return s, nil
		}
	}
	return engine.Subsystem{}, fmt.Errorf("unknown subsystem %q (have %s)", name, strings.Join(Names(), ", "))
}
