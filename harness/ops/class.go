package ops

// Class is the coarse outcome of a result: "ok", "blocked", or the errno
// name of a failed one ("EINVAL"). Corpus minimization counts (operation,
// class) pairs as features.
func (r Result) Class() string {
	switch {
	case r.Err != OK:
		return r.Err.String()
	case r.Blocked:
		return "blocked"
	}
	return "ok"
}
