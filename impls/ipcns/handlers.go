package ipcns

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// handler runs one operation of its kind on the namespace of the
// operation's task, following other's result where woken tasks race.
type handler func(ns *Namespace, op ops.Op, other *ops.Result) ops.Result

// handlers is the model's table of kinds: each file of the package adds
// those it implements, from init (ops.Handlers).
var handlers = ops.NewHandlers[handler]("the ipcns model")

// Handles reports whether the model runs operations of kind k (the test
// of the built-ins' parts asks it of every kind their subsystems have).
func Handles(k ops.Kind) bool { return handlers.Handles(k) }

// result adapts a method that needs no other result.
func result(f func(*Namespace, ops.Op) ops.Result) handler {
	return func(ns *Namespace, op ops.Op, _ *ops.Result) ops.Result { return f(ns, op) }
}

// errno adapts a method whose result is its error alone.
func errno(f func(*Namespace, ops.Op) ops.Errno) handler {
	return func(ns *Namespace, op ops.Op, _ *ops.Result) ops.Result { return ops.Result{Err: f(ns, op)} }
}
