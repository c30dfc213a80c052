package ops

import (
	"fmt"
	"iter"
	"slices"
	"sort"
	"strings"
)

// Kind is what an operation does. Each subsystem owns a fixed range of kind
// numbers (they travel in packed bytes, so they must not depend on the order
// in which files are compiled):
//
//	ids 1-7 and 96-111, tasks 8-15, shm 16-31, msg 32-47, sem 48-63, vma 64-95.
type Kind uint8

// Class names a kind of handle: what a script calls something an earlier
// operation made. Handles of class ClassObject stand for IPC ids and are
// resolved to each implementation's own id before an operation reaches it;
// the other classes are identities each implementation keeps itself.
type Class byte

// The handle classes.
const (
	ClassObject     Class = 'h' // an IPC object ("h1 = get msg ...")
	ClassAttachment Class = 'a' // a shmat attachment ("a1 = shmat shm h1")
	ClassFile       Class = 'f' // an open file description of the vma subsystem
)

// KindSpec describes one kind of operation. Formatting, parsing, shrinking,
// handle renumbering and equality are loops over these descriptions; nothing
// generic switches on the kind.
type KindSpec struct {
	Kind      Kind
	Name      string
	Subsystem string
	// Doc says what the operation does, in one line of the help text.
	Doc string
	// Types lists the IPC type words the operation takes ("rmid msg h1");
	// nil means no type word ("exit task=t1").
	Types []IPCType
	// Binds is the class of the handle the operation binds on success
	// ("h1 = get ..."); 0: it binds none.
	Binds Class
	// Removes: on success the operation removes the IPC object it names
	// (its id may then be reused, once the object is gone).
	Removes bool
	// Task and As say whether task= and as= are allowed.
	Task, As bool
	// Races: the operation may end in several allowed ways (woken tasks
	// racing for a lock), so a model may have to follow the other side.
	Races bool
	// OpaqueIDs reports whether the result holds ids or slot indexes that
	// a renaming of ids cannot relate (MSG_STAT names an object by index,
	// IPC_INFO returns the highest idx, churn the last id it made): under
	// ids-renamed only the outcome of such an operation compares.
	OpaqueIDs func(Op) bool
	// Args are the operation's arguments in canonical order.
	Args []Arg
	// Result writes and reads the result of a successful operation.
	Result ResultForm
	// Check validates what the arguments' syntax cannot (nil: nothing).
	Check func(Op) error
	// Cost is the work an operation stands for, in plain operations (nil:
	// one); a churn is its count.
	Cost func(Op) int64
	// Observes: the operation only reads the state (a layout, a listing);
	// a divergence there is caused by an operation before it (Cause).
	Observes bool
	// Reads, when set, says which operations of the kind only read the
	// state (the stat and get commands of a *ctl): Observes for them.
	Reads func(Op) bool
	// Cause, when set, names what else of an operation says what it does
	// beyond the arguments Cause keeps (msgrcv: the sign of its type).
	Cause func(Op) string
	// CauseName, when set, is the name a cause key gives the kind in
	// place of Name: kinds that are one call in two directions through
	// one kernel path share it (lock and unlock: mlock(2) and munlock(2),
	// both apply_vma_lock_flags and mlock_fixup), so that a bug of that
	// path is one cause whichever direction showed it.
	CauseName string
}

// Cost is the work a script stands for, in plain operations: what the
// shrinker's budget counts.
func Cost(script []Op) int64 {
	var n int64
	for _, op := range script {
		if s := Spec(op.Kind); s != nil && s.Cost != nil {
			n += s.Cost(op)
		} else {
			n++
		}
	}
	return n
}

// SubsystemSpec says which kinds a script of a subsystem may contain: its
// own and those of the subsystems it builds on (a msg script creates queues
// with get).
type SubsystemSpec struct {
	Name string
	Uses []string // kind subsystems allowed in its scripts, its own included
}

// table is the vocabulary: every kind and every subsystem.
type table struct {
	kinds      [256]*KindSpec
	byName     map[string]*KindSpec
	subsystems map[string]SubsystemSpec
}

var vocabulary = &table{byName: map[string]*KindSpec{}, subsystems: map[string]SubsystemSpec{}}

// register adds kinds to the vocabulary; each file of a subsystem calls it
// from init. A duplicate number or name is a programming error.
func register(sub SubsystemSpec, specs ...KindSpec) {
	if _, dup := vocabulary.subsystems[sub.Name]; dup && len(sub.Uses) > 0 {
		panic("ops: subsystem " + sub.Name + " registered twice")
	}
	if len(sub.Uses) > 0 {
		vocabulary.subsystems[sub.Name] = sub
	}
	for i := range specs {
		s := &specs[i]
		if vocabulary.kinds[s.Kind] != nil || vocabulary.byName[s.Name] != nil {
			panic(fmt.Sprintf("ops: kind %d %q registered twice", s.Kind, s.Name))
		}
		if s.Result == nil {
			s.Result = okResult{}
		}
		vocabulary.kinds[s.Kind] = s
		vocabulary.byName[s.Name] = s
	}
}

// Spec returns the description of a kind, or nil for an unknown one.
func Spec(k Kind) *KindSpec { return vocabulary.kinds[k] }

// SpecByName returns the description of the kind called name, or nil.
func SpecByName(name string) *KindSpec { return vocabulary.byName[name] }

// Specs lists every kind in number order.
func Specs() []*KindSpec {
	var out []*KindSpec
	for _, s := range vocabulary.kinds {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// Subsystems lists the names of the subsystems scripts can be written for.
func Subsystems() []string {
	var out []string
	for n := range vocabulary.subsystems {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Subsystem returns a subsystem's description.
func Subsystem(name string) (SubsystemSpec, bool) {
	s, ok := vocabulary.subsystems[name]
	return s, ok
}

// Allows reports whether a script of subsystem sub may contain kind k.
func (s SubsystemSpec) Allows(k Kind) bool {
	spec := Spec(k)
	return spec != nil && slices.Contains(s.Uses, spec.Subsystem)
}

// Races reports whether an operation of the subsystem's scripts may end in
// several allowed ways; a side that can follow then runs after the other
// and takes its way (porcupine's idea: keep every state still consistent
// with what was observed).
func (s SubsystemSpec) Races() bool {
	for _, k := range vocabulary.kinds {
		if k != nil && k.Races && slices.Contains(s.Uses, k.Subsystem) {
			return true
		}
	}
	return false
}

// SubsystemRaces is Races of the subsystem called name (false for a name
// the vocabulary does not know).
func SubsystemRaces(name string) bool {
	s, ok := Subsystem(name)
	return ok && s.Races()
}

// CoveredBy lists the script subsystems whose kinds all belong to the
// given kind subsystems: what an implementation made of parts that run
// those kinds can run.
func CoveredBy(kindSubsystems []string) []string {
	var out []string
	for _, name := range Subsystems() {
		s := vocabulary.subsystems[name]
		all := true
		for _, u := range s.Uses {
			all = all && slices.Contains(kindSubsystems, u)
		}
		if all {
			out = append(out, name)
		}
	}
	// In the order of the kind numbers the subsystems own: ids, shm, msg,
	// sem, vma.
	sort.SliceStable(out, func(i, j int) bool { return firstKind(out[i]) < firstKind(out[j]) })
	return out
}

// firstKind is the lowest kind number subsystem sub owns.
func firstKind(sub string) int {
	for k, s := range vocabulary.kinds {
		if s != nil && s.Subsystem == sub {
			return k
		}
	}
	return len(vocabulary.kinds)
}

func (k Kind) String() string {
	if s := Spec(k); s != nil {
		return s.Name
	}
	return fmt.Sprintf("kind%d", uint8(k))
}

// Races reports whether an operation may end in several allowed ways.
func (k Kind) Races() bool {
	s := Spec(k)
	return s != nil && s.Races
}

// typed reports whether the kind takes an IPC type word.
func (s *KindSpec) typed() bool { return len(s.Types) > 0 }

// present reports whether argument a appears in op.
func (a *Arg) present(op *Op) bool { return a.when == nil || a.when(op) }

// presentArgs yields, in order, the arguments of s that appear in op (each
// asked when reached, so a loop may change op as it goes).
func (s *KindSpec) presentArgs(op *Op) iter.Seq[*Arg] {
	return func(yield func(*Arg) bool) {
		for i := range s.Args {
			if a := &s.Args[i]; a.present(op) && !yield(a) {
				return
			}
		}
	}
}

// Syntax is the operation's text form for the help: the handle it binds,
// its name and type words, every argument with the values it reads
// (optional ones and ones that only some values of an earlier argument
// take in brackets), then as= and task= where allowed.
func (s *KindSpec) Syntax() string {
	var parts []string
	if s.Binds != 0 {
		parts = append(parts, string(s.Binds)+"N =")
	}
	parts = append(parts, s.Name)
	if s.typed() {
		names := make([]string, len(s.Types))
		for i, t := range s.Types {
			names[i] = t.String()
		}
		parts = append(parts, strings.Join(names, "|"))
	}
	for i := range s.Args {
		a := &s.Args[i]
		var p string
		switch {
		case a.flag != nil:
			parts = append(parts, "["+a.Name+"]")
			continue
		case a.Name == "":
			p = a.field.syntax()
		default:
			p = a.Name + "=" + a.field.syntax()
		}
		if a.optional || a.when != nil {
			p = "[" + p + "]"
		}
		parts = append(parts, p)
	}
	if s.As {
		parts = append(parts, "[as=U]")
	}
	if s.Task {
		parts = append(parts, "[task=tN]")
	}
	return strings.Join(parts, " ")
}
