//go:build linux && amd64

package kernel

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/worker"
)

// startNS starts a worker thread in a fresh private namespace, with no task
// process yet.
func startNS() (*ns, error) {
	n := &ns{}
	w, err := worker.Start(n.close)
	if err != nil {
		return nil, err
	}
	n.w, n.tasks = w, newTasks(w.Tid())
	n.proc.clock = n.tasks.pool.Time()
	n.shm.begin()
	return n, nil
}

// close ends what a thread leaves behind when it ends: the worker's own
// attachments (they are the host process's, and outlive the thread) and
// every task process. It runs on the thread, last.
func (n *ns) close() {
	if n.tasks == nil {
		return // the thread never started
	}
	n.closeTracer()
	n.closeSyscallCounter()
	n.detachWorker()
	n.releaseWorkerWindow()
	n.tasks.close()
}

// reset moves the thread into a new namespace unless nothing ran in the
// current one since it was made.
func (n *ns) reset() error {
	if !n.dirty {
		return nil
	}
	if err := n.endScript(); err != nil {
		return err
	}
	if err := worker.EnterNewNamespace(); err != nil {
		return err
	}
	n.tasks.pool.NewNamespace()
	n.dirty = false
	n.nextIDWritten = [len(ops.IPCTypes)]bool{}
	return nil
}

// endScript releases the tasks and detaches the worker's own attachments,
// so that nothing is left of the namespace about to be dropped, and starts
// the state of the next script. A task that cannot be released is killed.
func (n *ns) endScript() error {
	n.tasks.releaseAll(n.addrsOf)
	err := n.detachWorker()
	n.tasks.beginScript()
	n.shm.begin()
	n.spaces = spaces{}
	return err
}
