package runner

import (
	"context"
	"fmt"
	"strconv"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// WithLimits returns cfg with the machine facts the other sides report
// (ops.Info.Limits) added as ops.LimitPrefix options; an option cfg sets
// itself is kept. cfg is not modified.
func WithLimits(cfg ops.Config, others ...ops.Info) ops.Config {
	out := ops.Config{Options: map[string]string{}}
	for _, info := range others {
		for k, v := range info.Limits {
			out.Options[ops.LimitPrefix+k] = strconv.FormatInt(v, 10)
		}
	}
	for k, v := range cfg.Options {
		out.Options[k] = v
	}
	if len(out.Options) == 0 {
		out.Options = cfg.Options
	}
	return out
}

// ShareLimits gives every side the machine facts the others report (the
// live kernel's memory limit for shm, its VMA quirks, ...), so that a
// model compared with the kernel of this machine answers as that kernel
// does where the answer depends on the machine. It asks each side for its
// Info once.
func ShareLimits(ctx context.Context, sides []*Side) error {
	infos := make([]ops.Info, len(sides))
	for i, s := range sides {
		info, err := s.Impl.Info(ctx)
		if err != nil {
			return fmt.Errorf("%s: info: %w", s.Name, err)
		}
		infos[i] = info
	}
	for i, s := range sides {
		var others []ops.Info
		for j, info := range infos {
			if j != i {
				others = append(others, info)
			}
		}
		s.Config = WithLimits(s.Config, others...)
	}
	return nil
}
