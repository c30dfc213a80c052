//go:build linux && amd64

package task

import (
	"math"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/worker"
)

// Starting a task process costs the worker about half a millisecond (fork
// and exec), and the process needs a few more to start its runtime before
// it answers. A script that ends a task (exit) needs a new process for the
// task's next incarnation, so spare processes are started ahead, off the
// worker's path, by a spawner: a second locked thread, in a private IPC
// namespace of its own that nothing ever uses, that keeps one process
// started per task. The worker takes one when it needs a new process; the
// spare joins the worker's namespace at that first use (pool.go), as any
// reused task does. A spare is a child of the spawner thread: its
// parent-death signal fires when that thread ends (at Close, or with the
// host process), and the spawner kills and reaps the spares nobody took.

// spareNS is the namespace generation of a spare: never the worker's.
const spareNS = math.MaxUint64

// spawner starts spare task processes on its own locked thread.
type spawner struct {
	spares chan *Proc    // started processes nobody took yet
	want   chan struct{} // one token per spare to start
	stop   chan struct{} // closed by close
	exited chan struct{} // closed when the spawner's goroutine ends
}

// startSpawner starts a spawner and has it start its spares (count of
// them); it fails, having started nothing, when it cannot have a private
// namespace.
func startSpawner(bin string, count int) (*spawner, error) {
	s := &spawner{
		spares: make(chan *Proc, count),
		want:   make(chan struct{}, count),
		stop:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	ready := make(chan error, 1)
	worker.GoLocked(func() { s.loop(ready, bin) })
	if err := <-ready; err != nil {
		<-s.exited
		return nil, err
	}
	for range count {
		s.want <- struct{}{}
	}
	return s, nil
}

func (s *spawner) loop(ready chan<- error, bin string) {
	defer close(s.exited)
	if err := worker.EnterNewNamespace(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for {
		select {
		case <-s.stop:
			return
		case <-s.want:
		}
		p, err := StartProcess(0, bin)
		if err != nil {
			continue // the worker starts its own when no spare is there
		}
		p.ns = spareNS
		s.spares <- p // never blocks: one token per free slot
	}
}

// take returns a spare, or nil if none is ready, and asks for another.
func (s *spawner) take() *Proc {
	select {
	case p := <-s.spares:
		s.want <- struct{}{}
		return p
	default:
		return nil
	}
}

// close stops the spawner and kills and reaps every spare nobody took.
func (s *spawner) close() {
	close(s.stop)
	<-s.exited
	for {
		select {
		case p := <-s.spares:
			p.Kill()
		default:
			return
		}
	}
}
