// Package madv holds the Linux MADV_* number of each advice of the
// vocabulary: the kernel side's helper and the C reproducers issue the same
// numbers.
package madv

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Number is the MADV_* number of an advice (Linux's ABI; false for one
// the vocabulary has and this table does not).
func Number(a ops.VMAAdvice) (int64, bool) {
	switch a {
	case ops.AdviceNormal:
		return 0, true
	case ops.AdviceRandom:
		return 1, true
	case ops.AdviceSequential:
		return 2, true
	case ops.AdviceDontNeed:
		return 4, true
	case ops.AdviceDontFork:
		return 10, true
	case ops.AdviceDoFork:
		return 11, true
	case ops.AdviceMergeable:
		return 12, true
	case ops.AdviceUnmergeable:
		return 13, true
	case ops.AdviceHugePage:
		return 14, true
	case ops.AdviceNoHugePage:
		return 15, true
	case ops.AdviceDontDump:
		return 16, true
	case ops.AdviceDoDump:
		return 17, true
	case ops.AdviceWipeOnFork:
		return 18, true
	case ops.AdviceKeepOnFork:
		return 19, true
	case ops.AdviceGuardInstall:
		return 102, true
	case ops.AdviceGuardRemove:
		return 103, true
	case ops.AdviceWillNeed:
		return 3, true
	case ops.AdviceFree:
		return 8, true
	case ops.AdviceCold:
		return 20, true
	case ops.AdvicePageOut:
		return 21, true
	case ops.AdviceDontNeedLocked:
		return 24, true
	case ops.AdviceRemove:
		return 9, true
	case ops.AdvicePopulateRead:
		return 22, true
	case ops.AdvicePopulateWrite:
		return 23, true
	}
	return 0, false
}
