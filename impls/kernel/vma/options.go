package vma

import "time"

// Defaults of Options.
const (
	// DefaultWindowBase is where the window is: far above the heap and
	// below where the kernel places mappings it chooses itself.
	DefaultWindowBase = 0x200000000000
	// THPAreaOffset is how far above the window base the THP area starts
	// by default: 1 GiB, a multiple of a PMD's 2 MiB.
	THPAreaOffset = 1 << 30
	// DefaultMeasureBase is where the brk-expand workload maps its VMAs.
	DefaultMeasureBase = 0x300000000000
	// DefaultCallTimeout bounds one call to the helper.
	DefaultCallTimeout = 10 * time.Second
)

// Options configure Start. The zero value is the defaults.
type Options struct {
	// WindowBase is the address of the window (page aligned).
	WindowBase uint64
	// THPBase is the address of the THP area (2 MiB aligned, above the
	// window); default WindowBase + THPAreaOffset.
	THPBase uint64
	// MeasureBase is the address of the brk-expand workload's VMAs.
	MeasureBase uint64
	// CacheDir is where the helper is built; default
	// os.UserCacheDir()/ipcfuzz.
	CacheDir string
	// CC is the C compiler to try first.
	CC string
	// CallTimeout bounds each call; when it passes the helper is killed
	// and the Helper fails from then on.
	CallTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.WindowBase == 0 {
		o.WindowBase = DefaultWindowBase
	}
	if o.THPBase == 0 {
		o.THPBase = o.WindowBase + THPAreaOffset
	}
	if o.MeasureBase == 0 {
		o.MeasureBase = DefaultMeasureBase
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	return o
}
