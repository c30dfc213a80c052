package plugins

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	ipcfuzzv1 "github.com/ipcfuzz/ipcfuzz/plugins/proto/ipcfuzz/v1"
)

// maybeSlice draws nil, an empty slice or a non-empty slice, so the round
// trip is checked on all three.
func maybeSlice[T any](elem *rapid.Generator[T]) *rapid.Generator[[]T] {
	return rapid.Custom(func(t *rapid.T) []T {
		switch rapid.IntRange(0, 2).Draw(t, "shape") {
		case 0:
			return nil
		case 1:
			return []T{}
		}
		return rapid.SliceOfN(elem, 1, 8).Draw(t, "elems")
	})
}

var (
	genOp = rapid.Custom(func(t *rapid.T) ops.Op {
		return ops.Op{
			Kind:  ops.Kind(rapid.Uint8().Draw(t, "kind")),
			Type:  ops.IPCType(rapid.Uint8().Draw(t, "type")),
			Bind:  rapid.Int().Draw(t, "bind"),
			Obj:   ops.Ref{Handle: rapid.Int().Draw(t, "handle"), ID: rapid.Int64().Draw(t, "id")},
			Key:   rapid.Int32().Draw(t, "key"),
			Creat: rapid.Bool().Draw(t, "creat"),
			Excl:  rapid.Bool().Draw(t, "excl"),
			Mode:  rapid.Uint16().Draw(t, "mode"),
			Size:  rapid.Int64().Draw(t, "size"),
			Value: rapid.Int64().Draw(t, "value"),
			As:    rapid.Uint32().Draw(t, "as"),
			Task:  rapid.Uint8().Draw(t, "task"),
			Att:   rapid.Int().Draw(t, "att"),
			Cmd:   ops.ShmCmd(rapid.Uint8().Draw(t, "cmd")),
			Flags: rapid.Uint8().Draw(t, "flags"),
			Rows:  rapid.Bool().Draw(t, "rows"),

			Mtype:    rapid.Int64().Draw(t, "mtype"),
			Fill:     rapid.Uint8().Draw(t, "fill"),
			MsgFlags: rapid.Uint8().Draw(t, "msgflags"),
			MCmd:     ops.MsgCmd(rapid.Uint8().Draw(t, "mcmd")),
		}
	})
	genMessage = rapid.Custom(func(t *rapid.T) ops.Message {
		return ops.Message{Type: rapid.Int64().Draw(t, "type"), Text: rapid.StringMatching(`[a-z]{0,12}`).Draw(t, "text")}
	})
	genCompletion = rapid.Custom(func(t *rapid.T) ops.Completion {
		return ops.Completion{Task: rapid.Uint8().Draw(t, "task"), Err: ops.Errno(rapid.Uint16().Draw(t, "err")),
			Msg: genMessage.Draw(t, "msg"), Recv: rapid.Bool().Draw(t, "recv")}
	})
	// tasks are nil when empty: a set travels as bytes.
	genTasks = rapid.Custom(func(t *rapid.T) []uint8 {
		if rapid.Bool().Draw(t, "none") {
			return nil
		}
		return rapid.SliceOfN(rapid.Uint8(), 1, 4).Draw(t, "tasks")
	})
	genQueue = rapid.Custom(func(t *rapid.T) ops.QueueState {
		return ops.QueueState{ID: rapid.Int64().Draw(t, "id"), Msgs: maybeSlice(genMessage).Draw(t, "msgs"),
			Qbytes: rapid.Int64().Draw(t, "qbytes"), Senders: genTasks.Draw(t, "senders"), Receivers: genTasks.Draw(t, "receivers")}
	})
	genRow    = rapid.Make[ops.Row]()
	genObject = rapid.Custom(func(t *rapid.T) ops.Object {
		return ops.Object{
			ID:    rapid.Int64().Draw(t, "id"),
			Key:   rapid.Int32().Draw(t, "key"),
			Mode:  rapid.Uint16().Draw(t, "mode"),
			Owner: rapid.Uint32().Draw(t, "owner"),
			Size:  rapid.Int64().Draw(t, "size"),
		}
	})
	genEntry = rapid.Custom(func(t *rapid.T) ops.Entry {
		return ops.Entry{ID: rapid.Int64().Draw(t, "id"), Key: rapid.Int32().Draw(t, "key")}
	})
	genResult = rapid.Custom(func(t *rapid.T) ops.Result {
		r := ops.Result{
			Err:  ops.Errno(rapid.Uint16().Draw(t, "err")),
			ID:   rapid.Int64().Draw(t, "id"),
			List: maybeSlice(genEntry).Draw(t, "list"),
		}
		if rapid.Bool().Draw(t, "hasObj") {
			r.Obj = genObject.Draw(t, "obj")
		}
		if rapid.Bool().Draw(t, "hasRow") {
			r.Row = genRow.Draw(t, "row")
		}
		if rapid.Bool().Draw(t, "hasInfo") {
			r.Info = rapid.Make[ops.ShmInfo]().Draw(t, "info")
		}
		r.Rows = maybeSlice(genRow).Draw(t, "rows")
		r.Blocked = rapid.Bool().Draw(t, "blocked")
		if rapid.Bool().Draw(t, "hasMsg") {
			r.Msg = genMessage.Draw(t, "msg")
		}
		r.Qbytes = rapid.Int64().Draw(t, "qbytes")
		if rapid.Bool().Draw(t, "hasMsgInfo") {
			r.MsgInfo = rapid.Make[ops.MsgInfo]().Draw(t, "msginfo")
		}
		r.Done = maybeSlice(genCompletion).Draw(t, "done")
		r.Alternatives = rapid.IntRange(0, 100).Draw(t, "alternatives")
		return r
	})
	genSnapshot = rapid.Custom(func(t *rapid.T) ops.Snapshot {
		var s ops.Snapshot
		for i := range s.IDs {
			s.IDs[i] = ops.TypeState{
				Objects: maybeSlice(genObject).Draw(t, "objects"),
				NextID:  rapid.Int64().Draw(t, "next"),
				Limit:   rapid.Int64().Draw(t, "limit"),
			}
			s.Rows[i] = maybeSlice(genRow).Draw(t, "rows")
		}
		s.Shm = ops.ShmState{
			RmidForced:  rapid.Int64().Draw(t, "forced"),
			Tot:         rapid.Int64().Draw(t, "tot"),
			Attachments: maybeSlice(rapid.Make[ops.Attachment]()).Draw(t, "attachments"),
		}
		s.Queues = maybeSlice(genQueue).Draw(t, "queues")
		return s
	})
	genInfo = rapid.Custom(func(t *rapid.T) ops.Info {
		return ops.Info{
			Name:       rapid.String().Draw(t, "name"),
			Version:    rapid.String().Draw(t, "version"),
			Subsystems: maybeSlice(rapid.StringMatching(`[a-z]{0,6}`)).Draw(t, "subsystems"),
			ExactIDs:   rapid.Bool().Draw(t, "exact"),
			Blocking:   rapid.Bool().Draw(t, "blocking"),
			Counters:   rapid.Bool().Draw(t, "counters"),
			Follows:    rapid.Bool().Draw(t, "follows"),
		}
	})
	genConfig = rapid.Custom(func(t *rapid.T) ops.Config {
		switch rapid.IntRange(0, 2).Draw(t, "shape") {
		case 0:
			return ops.Config{}
		case 1:
			return ops.Config{Options: map[string]string{}}
		}
		return ops.Config{Options: rapid.MapOfN(rapid.StringMatching(`[a-z_]{1,8}`), rapid.String(), 1, 5).Draw(t, "options")}
	})
	genOutcome = rapid.Custom(func(t *rapid.T) ops.Outcome {
		return ops.Outcome{Results: maybeSlice(genResult).Draw(t, "results"), Snapshot: genSnapshot.Draw(t, "snapshot")}
	})
)

// wire sends m through the protobuf encoding and back, as the plugin
// connection does.
func wire[M proto.Message](t *rapid.T, m M) M {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	out := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	return out
}

func same(t *rapid.T, what string, got, want any) {
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s changed in the round trip:\n got  %#v\n want %#v", what, got, want)
	}
}

func TestRoundTripIsLossless(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		batch := maybeSlice(genOp).Draw(t, "ops")
		gotOps, err := OpsFromProto(wire(t, &ipcfuzzv1.ApplyRequest{Ops: OpsToProto(batch)}).Ops)
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) == 0 {
			same(t, "empty batch length", len(gotOps), 0)
		} else {
			same(t, "ops", gotOps, batch)
		}

		scripts := rapid.SliceOfN(rapid.SliceOfN(genOp, 1, 5), 0, 4).Draw(t, "scripts")
		gotScripts, err := ScriptsFromProto(wire(t, &ipcfuzzv1.ExecRequest{Scripts: ScriptsToProto(scripts)}).Scripts)
		if err != nil {
			t.Fatal(err)
		}
		same(t, "scripts", gotScripts, scripts)

		results := maybeSlice(genResult).Draw(t, "results")
		rs, empty := ResultsToProto(results)
		resp := wire(t, &ipcfuzzv1.ApplyResponse{Results: rs, ResultsEmpty: empty})
		gotResults, err := ResultsFromProto(resp.Results, resp.ResultsEmpty)
		if err != nil {
			t.Fatal(err)
		}
		same(t, "results", gotResults, results)

		snap := genSnapshot.Draw(t, "snapshot")
		gotSnap, err := SnapshotFromProto(wire(t, SnapshotToProto(snap)))
		if err != nil {
			t.Fatal(err)
		}
		same(t, "snapshot", gotSnap, snap)

		info := genInfo.Draw(t, "info")
		gotInfo, err := InfoFromProto(wire(t, InfoToProto(info)))
		if err != nil {
			t.Fatal(err)
		}
		same(t, "info", gotInfo, info)

		cfg := genConfig.Draw(t, "config")
		same(t, "config", ConfigFromProto(wire(t, ConfigToProto(cfg))), cfg)

		outcomes := maybeSlice(genOutcome).Draw(t, "outcomes")
		ms, empty := OutcomesToProto(outcomes)
		eresp := wire(t, &ipcfuzzv1.ExecResponse{Outcomes: ms, OutcomesEmpty: empty})
		gotOutcomes, err := OutcomesFromProto(eresp.Outcomes, eresp.OutcomesEmpty)
		if err != nil {
			t.Fatal(err)
		}
		same(t, "outcomes", gotOutcomes, outcomes)
	})
}

func TestFromProtoRefusesWhatGoCannotHold(t *testing.T) {
	cases := map[string]func() error{
		"op kind": func() error { _, err := OpFromProto(&ipcfuzzv1.Op{Kind: 256}); return err },
		"op type": func() error { _, err := OpFromProto(&ipcfuzzv1.Op{Type: 300}); return err },
		"op mode": func() error { _, err := OpFromProto(&ipcfuzzv1.Op{Mode: 1 << 16}); return err },
		"errno": func() error {
			_, err := ResultFromProto(&ipcfuzzv1.Result{Err: 1 << 16})
			return err
		},
		"object mode": func() error {
			_, err := ResultFromProto(&ipcfuzzv1.Result{Obj: &ipcfuzzv1.Object{Mode: 1 << 20}})
			return err
		},
		"snapshot types": func() error {
			_, err := SnapshotFromProto(&ipcfuzzv1.Snapshot{Ids: make([]*ipcfuzzv1.TypeState, 2)})
			return err
		},
		"snapshot missing": func() error { _, err := SnapshotFromProto(nil); return err },
		"outcome missing":  func() error { _, err := OutcomesFromProto([]*ipcfuzzv1.Outcome{nil}, false); return err },
		"nested": func() error {
			_, err := ResultsFromProto([]*ipcfuzzv1.Result{{}, {Err: 1 << 17}}, false)
			return err
		},
	}
	for name, decode := range cases {
		if err := decode(); err == nil {
			t.Errorf("%s: decoded without error", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// Packed data that is cut short or carries junk is refused, never read as
// something else.
func TestUnpackRefusesDamagedData(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		script := rapid.SliceOfN(genOp, 1, 8).Draw(t, "script")
		b := PackOps(script)
		cut := rapid.IntRange(0, len(b)-1).Draw(t, "cut")
		if _, err := UnpackOps(b[:cut]); err == nil {
			t.Fatalf("a script cut at %d of %d bytes was accepted", cut, len(b))
		}
		if _, err := UnpackOps(append(b, 0)); err == nil {
			t.Fatalf("a script with a trailing byte was accepted")
		}
		rs := rapid.SliceOfN(genResult, 1, 8).Draw(t, "results")
		rb := PackResults(rs)
		if _, err := UnpackResults(rb[:rapid.IntRange(0, len(rb)-1).Draw(t, "rcut")]); err == nil {
			t.Fatalf("results cut short were accepted")
		}
	})
}
