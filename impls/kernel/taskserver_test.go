//go:build linux && amd64

package kernel

import (
	"os"
	"testing"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/task"
	"github.com/stretchr/testify/require"
)

// taskExes lists the executables of m's task processes.
func taskExes(t *testing.T, m *Model) []string {
	var out []string
	for _, pid := range modelTasks(m) {
		exe, err := os.Readlink("/proc/" + itoa(int64(pid)) + "/exe")
		require.NoError(t, err)
		out = append(out, exe)
	}
	return out
}

// Where a C compiler is found, the tasks are the C task server.
func TestTaskServerIsUsed(t *testing.T) {
	t.Setenv(EnvTasks, "")
	bin, err := task.Server()
	if err != nil {
		t.Skipf("no C task server here: %v", err)
	}
	m := newModel(t)
	TestReusedTaskStartsClean(t)
	startTasks(t, m)
	for _, exe := range taskExes(t, m) {
		require.Equal(t, bin, exe)
	}
}

// The Go task (this binary re-executed) behaves the same: the scenarios
// that use tasks most, run with IPCFUZZ_KERNEL_TASKS=go.
func TestGoTasks(t *testing.T) {
	t.Setenv(EnvTasks, "go")
	self, err := os.Executable()
	require.NoError(t, err)
	m := newModel(t)
	startTasks(t, m)
	for _, exe := range taskExes(t, m) {
		require.Equal(t, self, exe)
	}
	for name, f := range map[string]func(*testing.T){
		"Interrupt": TestInterrupt, "SemUndoExitAndRmid": TestSemUndoExitAndRmid, "SemWakeOrder": TestSemWakeOrder,
		"ReusedTaskStartsClean": TestReusedTaskStartsClean, "MsgSenderWakeup": TestMsgSenderWakeup,
		"SemctlCommands": TestSemctlCommands, "OutliveJobControlSignals": TestTasksOutliveJobControlSignals, "Permissions": TestPermissions, "SemLargeArrayByTask": TestSemLargeArrayByTask,
		"TaskCallsTraced": TestTaskCallsTraced,
	} {
		t.Run(name, f)
	}
}
