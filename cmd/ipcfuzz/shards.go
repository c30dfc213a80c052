package main

import (
	"github.com/ipcfuzz/ipcfuzz/ci/shards"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/props"
)

// shardTable is the nightly shard table (ci/shards.Table) of the
// registry's subsystems and the built-in implementations.
func shardTable() []shards.Shard {
	var subs []shards.Subsystem
	for _, s := range props.Subsystems() {
		subs = append(subs, shards.Subsystem{Name: s.Name, Relations: s.Relations, Races: s.Races()})
	}
	return shards.Table(subs, impls.Runs)
}
