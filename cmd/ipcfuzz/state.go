package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// stateCmd runs a script on one implementation and prints it with every
// result stated ("-> ..."): how a corpus seed gets its expectations, from
// the kernel, before a person checks them.
func stateCmd(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := flag.NewFlagSet("state", flag.ContinueOnError)
	impl := fs.String("impl", "kernel", "the implementation whose results are stated")
	var sf sideFlags
	sf.register(fs, 60*time.Second)
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return usageError{"state needs one script file"}
	}
	sc, err := corpus.Read(files[0])
	if err != nil {
		return inputError{err}
	}
	s, info, err := sf.open(context.WithoutCancel(ctx), *impl)
	if err != nil {
		return err
	}
	defer s.Impl.Close()
	if !slices.Contains(info.Subsystems, sc.Subsystem) {
		return inputError{fmt.Errorf("%s does not run subsystem %s (it runs %s)", s.Name, sc.Subsystem, strings.Join(info.Subsystems, ", "))}
	}
	out, err := s.Impl.Exec(ctx, s.Config, [][]ops.Op{sc.Ops()}, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", *impl, err)
	}
	for i := range sc.Steps {
		r := out[0].Results[i]
		r.Alternatives = 0
		sc.Steps[i].Want = &r
	}
	fmt.Fprint(stdout, ops.Format(sc))
	return nil
}
