//go:build linux && amd64

package kernel

import (
	"maps"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// forkTask forks task op.Task's process into the slot op.ForkChild()
// (package task: the C server forks with CLONE_PARENT and the child serves
// on pipes of its own). A slot the script used since its start or its last
// exit is EBUSY, as the models have it. The child's mappings are the
// parent's: each attachment of the parent gets a copy at the same address.
func (n *ns) forkTask(op ops.Op) (unix.Errno, error) {
	parent, child := int(op.Task), int(op.ForkChild())
	if n.tasks.used[child] {
		return unix.EBUSY, nil
	}
	if _, err := n.tasks.get(parent); err != nil {
		return 0, err
	}
	c, err := n.tasks.pool.Fork(parent, child)
	if err != nil {
		return 0, err
	}
	n.tasks.pending[child] = nil
	n.tasks.used[child] = true
	pid := ops.TaskPID(child, n.tasks.gen[child])
	n.tasks.pids[c.Pid()] = pid
	// The parent's maps may hold pieces of its window no kattach names
	// (what a SHM_REMAP left of an attachment): the child's has them too.
	n.shm.attachedBy[child] = n.shm.attachedBy[parent]
	n.shm.winNS[child] = maps.Clone(n.shm.winNS[parent])
	for _, a := range slices.Clone(n.shm.attached) {
		if a.task == parent {
			n.shm.attached = append(n.shm.attached, &kattach{att: a.att, task: child, pid: pid, addr: a.addr, id: a.id, win: a.win, ns: a.ns, origin: a.origin})
			n.shm.attachedBy[child] = true
		}
	}
	return 0, nil
}
