package vma

import "time"

// Defaults of Options.
const (
	// DefaultWindowBase is where the window is: far above the heap and
	// below where the kernel places mappings it chooses itself.
	DefaultWindowBase = 0x200000000000
	// DefaultMeasureBase is where the brk-expand workload maps its VMAs.
	DefaultMeasureBase = 0x300000000000
	// DefaultCallTimeout bounds one call to the helper.
	DefaultCallTimeout = 10 * time.Second
)

// Options configure Start. The zero value is the defaults.
type Options struct {
	// WindowBase is the address of the window (page aligned).
	WindowBase uint64
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
	if o.MeasureBase == 0 {
		o.MeasureBase = DefaultMeasureBase
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	return o
}
