package ops

// Plainer returns copies of op with one argument made plainer (a size, a
// count, a type or a literal id lowered toward its plainest value, a flag
// cleared), for the shrinker. Some may be invalid; the shrinker validates.
func Plainer(op Op) []Op {
	s := Spec(op.Kind)
	if s == nil {
		return nil
	}
	var out []Op
	for a := range s.presentArgs(&op) {
		if a.flag != nil {
			if a.flag.get(&op) {
				o := op
				a.flag.set(&o, false)
				out = append(out, o)
			}
			continue
		}
		for _, set := range a.field.plainer(&op) {
			o := op
			set(&o)
			out = append(out, o)
		}
	}
	return out
}

// RenumberHandles returns op with every handle it uses (not the one it
// binds) replaced by f(class, number); an object handle mapped to 0 becomes
// the literal id -1, what an unbound handle resolves to.
func RenumberHandles(op Op, f func(Class, int) int) Op {
	eachUsedHandle(&op, func(c Class, h *int, ref *Ref) {
		switch n := f(c, *h); {
		case ref == nil || n > 0:
			*h = n
		default:
			*ref = Ref{ID: -1}
		}
	})
	return op
}
