package impls

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteList writes the table of 'ipcfuzz list': each built-in with its
// subsystems, whether its ids are exact, whether it counts, and its
// options; then the plugin path form and how a kernel image boots here.
func WriteList(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSUBSYSTEMS\tEXACT IDS\tCOUNTERS\tOPTIONS")
	for _, n := range Names() {
		b, _ := Lookup(n)
		fmt.Fprintf(tw, "%s\t%s\t%v\t%v\t%s\n", n, strings.Join(b.Subsystems(), ","), b.ExactIDs, b.Counters, b.Options())
	}
	fmt.Fprintln(tw, "./PATH\tany executable that speaks the ipcfuzz plugin handshake (see docs/plugins.md)\t\t\t")
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "kernel:image=PATH boots in QEMU under %s on this machine\n", strings.ToUpper(VMAccel()))
	return nil
}

// Runs reports whether the built-in implementation spec names (with or
// without options) runs subsystem.
func Runs(spec, subsystem string) bool {
	name, _, _ := strings.Cut(spec, ":")
	b, err := Lookup(name)
	return err == nil && slices.Contains(b.Subsystems(), subsystem)
}
