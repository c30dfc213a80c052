package ops

// witnessSems bounds the semaphores of one array a witness reads one by
// one (getncnt, getzcnt, getpid), and witnessObjects the objects read.
const (
	witnessSems    = 8
	witnessObjects = 8
)

// Witnesses lists the operations that observe, at a step, the state that
// a final snapshot shows: the address space (layout), each listing
// (list T rows), and each object the script made, read by the calls that
// show it (stat; msgctl and shmctl stat; semctl getall, and getncnt,
// getzcnt and getpid of each of its first semaphores). A divergence seen
// only in the final state is turned into one seen at a step by appending
// the first of them whose result differs (harness/runner): a C reproducer
// checks step results, so a finding whose sides differ only in their
// final states becomes one it tells apart. Every witness is issued by the
// main task as root, in the order listed; those of a subsystem's scripts
// only (sub), the kinds it does not allow left out. results are one
// side's results of script: an object is read only where its get
// succeeded there.
func Witnesses(sub string, script []Op, results []Result) []Op {
	spec, ok := Subsystem(sub)
	if !ok {
		return nil
	}
	var out []Op
	add := func(op Op) {
		if spec.Allows(op.Kind) && Validate(op) == nil {
			out = append(out, op)
		}
	}
	add(Op{Kind: KindLayout})
	for _, t := range IPCTypes {
		add(Op{Kind: KindList, Type: t, Rows: true})
	}
	objects := 0
	for i, op := range script {
		if op.Kind != KindGet || op.Bind == 0 || objects == witnessObjects ||
			i >= len(results) || results[i].Err != OK || results[i].Blocked {
			continue
		}
		objects++
		ref := Ref{Handle: op.Bind}
		add(Op{Kind: KindStat, Type: op.Type, Obj: ref})
		switch op.Type {
		case Msg:
			add(Op{Kind: KindMsgctl, Type: Msg, Obj: ref, MCmd: MsgIPCStat})
		case Shm:
			add(Op{Kind: KindShmctl, Type: Shm, Obj: ref, Cmd: ShmIPCStat})
		case Sem:
			add(Op{Kind: KindSemctl, Type: Sem, Obj: ref, Sem: SemArgs{Cmd: SemGetAll}})
			for n := int64(0); n < min(op.Size, witnessSems); n++ {
				for _, c := range []SemCmd{SemGetNcnt, SemGetZcnt, SemGetPid} {
					add(Op{Kind: KindSemctl, Type: Sem, Obj: ref, Sem: SemArgs{Cmd: c, Num: n}})
				}
			}
		}
	}
	return out
}
