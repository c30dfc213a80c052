//go:build linux && amd64

package kernel

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/kcov"
)

// Facts implements impls.FactReporter: the answers of this machine that
// the models take as facts (machineFacts).
func (m *Model) Facts() ops.Facts { return machineFacts() }

// machineFacts reports ops.FactShmMaxPages: the largest shm segment, in
// pages, that shmget can create on this machine without ENOMEM. shmget
// charges the segment's pages to the overcommit accounting
// (shmem_acct_size, security_vm_enough_memory_mm); what that refuses
// depends on vm.overcommit_memory:
//
//   - 0 (heuristic): a charge of more pages than MemTotal + SwapTotal
//     (totalram_pages + total_swap_pages) is refused, anything less is
//     granted: the fact is that sum;
//   - 1 (always): nothing is refused: the fact is not reported;
//   - 2 (never): the answer depends on what is committed at that moment
//     (CommitLimit - Committed_AS), which no script can hold fixed: the
//     fact is not reported.
//
// It also reports the huge pages a SHM_HUGETLB segment may reserve
// (hugeFacts), and ops.FactKCOV where the kernel offers KCOV.
func machineFacts() ops.Facts {
	fs := hugeFacts(ops.Facts{})
	if kcov.Available() {
		fs = fs.With(ops.FactKCOV, 1)
	}
	mode, err := readProcInt("/proc/sys/vm/overcommit_memory")
	if err != nil || mode != 0 {
		return fs
	}
	mem, err := meminfoKB("MemTotal", "SwapTotal")
	if err != nil {
		return fs
	}
	return fs.With(ops.FactShmMaxPages, (mem[0]+mem[1])*1024/int64(os.Getpagesize()))
}

// hugeFacts adds ops.FactHugePages and ops.FactHugePageKiB to fs: the
// huge pages of the default size nobody has reserved (HugePages_Free less
// HugePages_Rsvd), which a SHM_HUGETLB segment may reserve, and their
// size; -1 pages where the kernel has no hugetlb support (no
// /proc/sys/vm/nr_hugepages). The pool is the whole machine's: another
// user of huge pages changes it under a run (none on a machine with no
// huge pages, the common case).
func hugeFacts(fs ops.Facts) ops.Facts {
	if _, err := os.Stat("/proc/sys/vm/nr_hugepages"); err != nil {
		return fs.With(ops.FactHugePages, -1)
	}
	v, err := meminfoKB("HugePages_Free", "HugePages_Rsvd", "Hugepagesize")
	if err != nil {
		return fs
	}
	return fs.With(ops.FactHugePages, max(v[0]-v[1], 0)).With(ops.FactHugePageKiB, v[2])
}

// meminfoKB reads the named fields of /proc/meminfo, in kB.
func meminfoKB(names ...string) ([]int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return nil, err
	}
	b = append([]byte("\n"), b...)
	out := make([]int64, len(names))
	for i, name := range names {
		at := bytes.Index(b, []byte("\n"+name+":"))
		if at < 0 {
			return nil, fmt.Errorf("/proc/meminfo has no %s", name)
		}
		f := bytes.Fields(b[at+len(name)+2:])
		if len(f) == 0 {
			return nil, fmt.Errorf("/proc/meminfo: no value for %s", name)
		}
		if out[i], err = strconv.ParseInt(string(f[0]), 10, 64); err != nil {
			return nil, fmt.Errorf("/proc/meminfo %s: %w", name, err)
		}
	}
	return out, nil
}

func readProcInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
