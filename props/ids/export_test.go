package ids

import (
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// NoWrap is Subsystem without the seq wrap scenario, for the properties
// that run against the live kernel in go test, where one wrap takes
// seconds: the same scripts otherwise, the wrap's draws included. The
// kernel meets the wrap in TestSeqWrapOnEveryImplementation and in the
// nightly shards, which draw Subsystem.
var NoWrap = func() engine.Subsystem {
	s := Subsystem
	s.NewShadow = func(src engine.Source, rel equiv.Relation) engine.Shadow { return newShadowWrapping(src, rel, false) }
	return s
}()
