package equiv

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// notObservable lists the fields no program can observe, with why; every
// other field of Result and Snapshot must be seen by equality.
var notObservable = map[string]string{
	"Result.Alternatives": "a statistic of the model (how many outcomes it allowed), not a result",
	"Result.Obj.ID":       "IPC_STAT does not report the id; a stat result's Obj.ID is always 0",
}

func init() {
	// A row of /proc/sysvipc/msg or /sem has fewer columns than shm's.
	for t, fields := range map[int][]string{
		0: {"Nattch", "RSS", "Swap"},                                  // msg
		1: {"Qnum", "Cpid", "Lpid", "Nattch", "Dtime", "RSS", "Swap"}, // sem
		2: {"Qnum"},                                                   // shm
	} {
		for _, f := range fields {
			notObservable[fmt.Sprintf("Snapshot.Rows[%d][0].%s", t, f)] = "not a column of that type's /proc/sysvipc file"
			notObservable[fmt.Sprintf("Snapshot.Namespaces[0].Rows[%d][0].%s", t, f)] = "not a column of that type's /proc/sysvipc file"
		}
	}
}

// path is a way down a value: field indexes, and -1 for "the first element"
// of a slice (grown to one element if empty) or i >= 0 for array element i.
type path struct {
	name  string
	steps []step
}

type step struct {
	field int
	elem  int // -2: a field; -1: slice element 0; >= 0: array element
}

// leaves lists every leaf field of t (integers, bools, strings).
func leaves(t reflect.Type, name string, prefix []step) []path {
	switch t.Kind() {
	case reflect.Struct:
		var out []path
		for i := range t.NumField() {
			f := t.Field(i)
			out = append(out, leaves(f.Type, name+"."+f.Name, append(append([]step(nil), prefix...), step{field: i, elem: -2}))...)
		}
		return out
	case reflect.Slice:
		return leaves(t.Elem(), name+"[0]", append(append([]step(nil), prefix...), step{elem: -1}))
	case reflect.Array:
		var out []path
		for i := range t.Len() {
			out = append(out, leaves(t.Elem(), fmt.Sprintf("%s[%d]", name, i), append(append([]step(nil), prefix...), step{elem: i}))...)
		}
		return out
	}
	return []path{{name: name, steps: prefix}}
}

// perturb changes the leaf at p in v (a pointer), growing slices as needed.
func perturb(v reflect.Value, p path) {
	v = v.Elem()
	for _, s := range p.steps {
		switch {
		case s.elem == -2:
			v = v.Field(s.field)
		case s.elem == -1:
			if v.Len() == 0 {
				v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
			}
			v = v.Index(0)
		default:
			v = v.Index(s.elem)
		}
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() ^ 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() ^ 1)
	case reflect.String:
		v.SetString(v.String() + "x")
	default:
		panic("perturb: " + v.Kind().String())
	}
}

// clone copies v deeply through the packed-free route of reflection.
func clone[T any](v T) T {
	var out T
	deepCopy(reflect.ValueOf(&out).Elem(), reflect.ValueOf(v))
	return out
}

func deepCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
		for i := range src.Len() {
			deepCopy(dst.Index(i), src.Index(i))
		}
	case reflect.Struct:
		for i := range src.NumField() {
			deepCopy(dst.Field(i), src.Field(i))
		}
	case reflect.Array:
		for i := range src.Len() {
			deepCopy(dst.Index(i), src.Index(i))
		}
	default:
		dst.Set(src)
	}
}

// fill gives every leaf of v a small random value and every slice zero to
// two elements: values drawn from the type itself.
func fill(v reflect.Value, r *rand.Rand) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), r)
		}
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), r)
		}
	case reflect.Slice:
		n := r.IntN(3)
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			fill(v.Index(i), r)
		}
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(r.IntN(16)))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(r.IntN(16)))
	case reflect.String:
		v.SetString([]string{"", "ab", "xyz"}[r.IntN(3)])
	}
}

// randomOp draws a valid operation of any kind: every field of Op filled
// at random (as a type, not as a list of fields), the kind and type from
// the vocabulary, and what its text reads back as.
func randomOp(r *rand.Rand) ops.Op {
	specs := ops.Specs()
	for {
		var op ops.Op
		fill(reflect.ValueOf(&op).Elem(), r)
		s := specs[r.IntN(len(specs))]
		op.Kind, op.Task, op.As, op.Bind, op.Obj = s.Kind, 0, 0, 0, ops.Ref{ID: op.Obj.ID}
		if len(s.Types) > 0 {
			op.Type = s.Types[r.IntN(len(s.Types))]
		}
		op.MsgFlags |= ops.MsgNowait
		for i := range op.Sem.Sops {
			op.Sem.Sops[i].Flags |= ops.SemNowait
		}
		if back, err := ops.ParseOp(ops.FormatOp(op)); err == nil {
			return back
		}
	}
}

// randomResult draws a result, most often a success (only a success shows
// the kind's own fields).
func randomResult(r *rand.Rand) ops.Result {
	var res ops.Result
	fill(reflect.ValueOf(&res).Elem(), r)
	if r.IntN(5) > 0 {
		res.Err, res.Blocked = ops.OK, false
	}
	for i := range res.Done {
		if r.IntN(2) == 0 {
			res.Done[i].Err = ops.OK
		}
	}
	return res
}

// Every field of Result is seen by exact equality for some operation: a
// field added later without a text form fails here the day it lands.
func TestEveryResultFieldIsCompared(t *testing.T) {
	for _, p := range leaves(reflect.TypeFor[ops.Result](), "Result", nil) {
		if _, skip := notObservable[p.name]; skip {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			seen := false
			for i := 0; i < 5000 && !seen; i++ {
				op, base := randomOp(r), randomResult(r)
				changed := clone(base)
				perturb(reflect.ValueOf(&changed), p)
				if ops.FormatResult(op, base) == ops.FormatResult(op, changed) {
					continue
				}
				seen = true
				d := Compare(Exact, []ops.Op{op}, ops.Outcome{Results: []ops.Result{base}}, ops.Outcome{Results: []ops.Result{changed}})
				if d == nil {
					t.Fatalf("%s: the texts differ but exact equality says equal", p.name)
				}
			}
			if !seen {
				t.Fatalf("%s is shown by no operation's result: equality cannot see it (list it in notObservable if no program can)", p.name)
			}
		})
	}
}

// Every field of Snapshot is seen by exact equality.
func TestEverySnapshotFieldIsCompared(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, p := range leaves(reflect.TypeFor[ops.Snapshot](), "Snapshot", nil) {
		if _, skip := notObservable[p.name]; skip {
			continue
		}
		for range 20 {
			var base ops.Snapshot
			fill(reflect.ValueOf(&base).Elem(), r)
			changed := clone(base)
			perturb(reflect.ValueOf(&changed), p)
			if Compare(Exact, nil, ops.Outcome{Snapshot: base}, ops.Outcome{Snapshot: changed}) == nil {
				t.Fatalf("%s changed and exact equality did not see it", p.name)
			}
		}
	}
}

// No field of Observation is seen by equality, under any relation: the
// side channel can differ however it likes (one side slower, one side
// with coverage, one with none) and two outcomes that agree still agree.
func TestNoObservationFieldIsCompared(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, p := range leaves(reflect.TypeFor[ops.Observation](), "Observation", nil) {
		for range 200 {
			op, res := randomOp(r), randomResult(r)
			var snap ops.Snapshot
			fill(reflect.ValueOf(&snap).Elem(), r)
			var obs ops.Observation
			fill(reflect.ValueOf(&obs).Elem(), r)
			base := ops.Outcome{Results: []ops.Result{res}, Snapshot: snap, Observed: []ops.Observation{obs}}
			changed := clone(base)
			perturb(reflect.ValueOf(&changed.Observed[0]), p)
			none := clone(base)
			none.Observed = nil
			for _, rel := range []Relation{Exact, IDsRenamed} {
				for _, other := range []ops.Outcome{changed, none} {
					if d := Compare(rel, []ops.Op{op}, base, other); d != nil {
						t.Fatalf("%s: %s changed and %s equality saw it: %v", rel, p.name, rel, d)
					}
				}
			}
		}
	}
}
