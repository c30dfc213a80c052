package runner

// Sink receives the events of a run, in order: one Start, then a Script
// for every script judged (in script order) and a Found for every distinct
// finding as soon as it is shrunk and stored (before the Script event of
// the script that first showed it), then one End. Output formats (the text
// summary, JSON, KTAP, JUnit) are sinks; none of them is the runner's
// business. A sink does not fail the run: one that cannot write keeps its
// error for whoever made it.
type Sink interface {
	Start(Start)
	Script(Script)
	Found(Found)
	End(End)
}

// Start opens a run: what is compared, and how.
type Start struct {
	// Command is the command line that reproduces the run.
	Command string
	// A and B are the sides as given, KernelA and KernelB the release
	// each runs ("" for a model).
	A, B, KernelA, KernelB string
	// Subsystem and Relation are the run's; a replay of files of several
	// subsystems names them all, joined by commas.
	Subsystem, Relation string
	// Engine and Seed draw the scripts of a compare ("" and 0 for a
	// replay).
	Engine string
	Seed   uint64
	// Checks is the number of scripts planned (0: until the time is
	// up).
	Checks int
	// KeepGoing: the run goes on after its first finding.
	KeepGoing bool
	// Files are the script files a replay runs, in order (nil for a
	// compare, whose scripts are drawn).
	Files []string
}

// ScriptVerdict is what became of one script.
type ScriptVerdict string

// The verdicts of a script.
const (
	// ScriptAgree: both sides gave equivalent results and final states (and,
	// in a replay, the results the file states).
	ScriptAgree ScriptVerdict = "agree"
	// ScriptDiverged: the sides disagree (or a side disagrees with the file).
	ScriptDiverged ScriptVerdict = "diverged"
	// ScriptExpected: the sides disagree as a known difference of the
	// kernels' versions explains (Options.Known); not a finding.
	ScriptExpected ScriptVerdict = "expected"
	// ScriptFailed: a side failed on the script (crashed, hung, answered
	// garbage) and failed again alone on a fresh plugin.
	ScriptFailed ScriptVerdict = "failed"
)

// Script is the verdict on one script.
type Script struct {
	// Index is the script's number in the run (0-based); Name its file
	// in a replay ("" for a drawn script).
	Index int
	Name  string
	// Verdict is what became of it, Signature the divergence's or the
	// failure's ("" when the sides agree), Ops its length.
	Verdict   ScriptVerdict
	Signature string
	Ops       int
	// Problems (one line each) and Table (both sides' results side by
	// side) say why a replayed script failed.
	Problems []string
	Table    string
}

// Found is a distinct finding, once it is shrunk and stored: its entry of
// Result.Findings as it is then (hits: 1; End has the final counts) and
// the text of its finding file (corpus.Render).
type Found struct {
	Finding Finding
	Text    string
}

// End closes a run with its result: Result.Findings carry the final hit
// counts. Err is what stopped the run, if anything did (the result then
// holds what was compared until then).
type End struct {
	Result *Result
	Err    error
}
