// Package ops is the vocabulary every side of ipcfuzz shares: the operations
// a script can issue, their results, the observable state of an
// implementation, and the canonical text form of all three. It is the
// ground floor of the project and imports nothing of ours.
//
// # Index
//
// Scripts, their text and their parts:
//   - [Op], [Result], [Snapshot]: one operation, what it returned, the
//     state at the end; [Ref] names an object by handle or id.
//   - [Script], [Step]: a subsystem and its steps, each an operation and
//     the result it states; [NewScript], [Script.Ops].
//   - [Parse], [ParseString], [ParseOp], [ParseResult], [ParseStep] read
//     the canonical text; [Format], [FormatOp], [FormatResult],
//     [FormatStep], [FormatSnapshot] write it, and parse(format(x)) == x.
//     A [ParseError] names the file and line.
//   - [ScriptReader] ([NewScriptReader]) reads a script step by step, for
//     scripts too long to hold.
//   - [Handles] resolves handles to each implementation's own ids;
//     [UsedHandles], [RenumberHandles].
//
// The table that drives everything generic:
//   - [KindSpec]: one per kind of operation (its name, subsystem, handles,
//     arguments, result form, cost); [Spec], [SpecByName], [Specs].
//   - [SubsystemSpec]: the kinds a script of a subsystem may hold
//     ([Subsystem], [Subsystems], [SubsystemSpec.Allows]), whether they race
//     ([SubsystemSpec.Races], [SubsystemRaces]) and which subsystems a set
//     of implementation parts covers ([CoveredBy]).
//   - [Arg], [Plainer], [ResultForm]: how arguments and results are
//     written, read and made plainer by the shrinker; [Validate], [Cost].
//
// Implementations, as the harness sees them:
//   - [Model]: one implementation driven operation by operation
//     ([Follower] where woken tasks race, [Measurer] and [Counting] for
//     the complexity engine, [ScriptRunner] for whole scripts); [Run],
//     [RunFollowing].
//   - [Impl]: an implementation in this process ([Local], [NewLocal]) or a
//     plugin process; [Wire] for those whose outcomes travel as bytes.
//   - [Info]: what an implementation says of itself; [Config]: its
//     options ([OptionSpec], [OptionSpecs], [CapsOption],
//     [ParseImplName]) and the machine facts the other side reports
//     ([Fact], [Facts], [FactsFromMap]).
//   - [Outcome]: one script's results and final snapshot.
//   - [Workload], [WorkloadSpec], [Measurement]: what the complexity
//     engine runs inside each implementation; [MeasureScripts].
//
// Errors and results: [Errno], [Completion] (a task asleep in an earlier
// call that returned), [Object], [Entry], [Row].
//
// # One file per subsystem
//
// Each subsystem registers its kinds, arguments, results and snapshot
// part in a file of its own: ids.go (the SysV IPC id allocator and the
// /proc/sysvipc listings: [IPCType], [TypeState]), tasks.go (tasks that
// exit or are interrupted), shm.go ([ShmCmd], [ShmState], [PID]), msg.go
// ([MsgCmd], [Message], [QueueState]), sem.go ([SemArgs], [Sop],
// [SemState]), vma.go and vmakinds.go (one address space: [VMAArgs],
// [VMAState], [AddressSpace], [VMAQuirks]). Each owns a fixed range of
// kind numbers ([Kind]).
//
// # Adding a kind of operation
//
//  1. A Kind constant in its subsystem's range, and its KindSpec: name,
//     Doc, Types, Binds, Args (each argument a field accessor and a codec),
//     Result. Both may go in a file of their own, registered from its init
//     with register(SubsystemSpec{Name: subsystem}, spec) as shmaddr.go
//     does, so that no existing file changes.
//  2. New values go in the subsystem's group of Op, Result or Snapshot
//     (an Args struct, a result field); the packed wire, the text, the
//     shrinker, handle renumbering and equality follow from the table.
//  3. Its handlers, one per side, each registered from init in a
//     [Handlers] table beside the code that runs it: the model
//     (impls/ipcns, or a call of [AddressSpace] in impls/addrspace.go),
//     the kernel adapter (impls/kernel) and the C reproducer
//     (impls/kernel/repro). Tests in impls and impls/kernel/repro fail
//     while a kind has no handler on a side that runs its subsystem. Each
//     may be a new file of its package.
//  4. An action in the generator's table (props/<subsystem>/actions.go;
//     for vma the menu of props/vma/gen.go): the one existing file an IPC
//     kind that needs no new field of Op or Result must change.
package ops
